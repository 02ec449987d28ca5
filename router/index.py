"""A library's built index, as a value: building is explicit and saving is a separate step.

    index, report = LibraryIndex.build(LibrarySpec.create(["skills"], profile="genkit"), RouterConfig())
    index.save()                      # write it to spec.index_folder (only what changed)
    router = Router.from_index(index)  # routes over it; building again is never needed

:meth:`LibraryIndex.build` reads the library the spec describes once (its learned examples included), loads what
the index folder holds and embeds only the texts it lacks, and writes nothing; the :class:`BuildReport` says what
was embedded and what a save would write. An index never changes once built: a router over it shares it, and a
router with another config builds its own (:meth:`router.routing.Router.with_config` reuses an index whose
index-shaping fields, ``RouterConfig.index_fields``, are the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from router.config import RouterConfig
from router.errors import IndexSaveError
from router.spec import LibrarySpec

if TYPE_CHECKING:
    from indexes.base import Encoder
    from router.profiles import Profile
    from router.registry import SkillRegistry
    from router.signals import BuildReport, Signals


@dataclass(frozen=True)
class LibraryIndex:
    """The built signals of one library (``spec``) under one config, with the registry they were built from and
    the encoder that embedded them (requests must be embedded by the same model)."""

    spec: LibrarySpec
    config: RouterConfig
    registry: SkillRegistry
    profile: Profile
    signals: Signals
    encoder: Encoder
    learned: dict[str, list[str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    _report: BuildReport | None = field(default=None, repr=False, compare=False)

    @classmethod
    def build(cls, spec: LibrarySpec, config: RouterConfig | None = None, *, encoder: Encoder | None = None,
              progress: bool = False) -> tuple[LibraryIndex, BuildReport]:
        """Build the index of ``spec``'s library under ``config`` without writing anything; returns the index and
        the build report (texts embedded, notes). :meth:`save` writes it."""
        from router.routing import Router

        router = Router.from_spec(spec, config, encoder=encoder).build(progress=progress, persist=False)
        report = router.build_report
        assert report is not None
        index = cls(spec, router.config, router.registry, router.profile, router.signals, router.encoder,
                    dict(router.learned), tuple(router.notes), report)
        return index, report

    def save(self) -> bool:
        """Write the index to :attr:`LibrarySpec.index_folder` (only what changed); False when the folder already
        held it. Raises :class:`IndexSaveError` naming the folder when it cannot be written."""
        report = self._report
        if report is None or report.pending is None:
            return False
        try:
            report.pending()
        except OSError as exc:
            raise IndexSaveError(f"the index could not be saved to {self.spec.index_folder}: "
                                 f"{exc.strerror or exc}; choose a writable folder with --index-dir") from None
        report.pending, report.saved = None, True
        return True
