"""SKILL.md frontmatter and YAML, parsed safely: the parts every profile, the linter and the indexer share.

- :func:`safe_load` and :func:`compose` are PyYAML's safe loader with one more guard: PyYAML composes nested
  collections recursively, so a kilobyte of ``[[[[...`` raises ``RecursionError`` from deep inside the parser.
  Nesting deeper than :data:`MAX_YAML_DEPTH` is refused up front as a YAML error (:class:`YAMLNestingError`),
  so every caller handles it exactly as it handles any other YAML error (genkit: zero values; agentskills: skip
  the skill with a warning; lint: an error; labels: a file error). No tag ever constructs an object.
- Aliases are bounded as the document is parsed, not when its value is later walked: a document whose aliases
  would expand it by more than :data:`MAX_YAML_ALIAS_NODES` nodes (a "billion laughs" of nested anchors: nine
  levels of nine aliases is 9^9 nodes from 200 bytes), or whose alias names a collection that holds it, is
  refused as a YAML error (:class:`YAMLAliasError`). Constructing shares aliased values, so the parse itself is
  cheap; what blew up was every later walk of the value (JSON encoding it for ``GET /v1/skills/NAME``).
- :func:`split_frontmatter`, :func:`load_frontmatter` and :func:`quote_colon_values` are the Agent Skills
  reference parser (skills-ref) and its client guide's retry for unquoted colons; the agentskills profile, the
  linter and the lenient description the router indexes (:mod:`router.texts`) all read frontmatter this way.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

#: Deepest nesting of YAML collections accepted (real frontmatter and labels files stay under 10).
MAX_YAML_DEPTH = 100
#: Most nodes aliases may add to a document when expanded (a few anchors reused in a labels file or a config add
#: tens; nine levels of nine aliases add 435 million).
MAX_YAML_ALIAS_NODES = 10_000

_OPEN = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken, yaml.FlowMappingStartToken,
         yaml.FlowSequenceStartToken)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
_FAST = getattr(yaml, "CSafeLoader", None)
_KEY_VALUE = re.compile(r"^([A-Za-z0-9_-]+):[ \t]+(.*\S)[ \t]*$")


class YAMLNestingError(yaml.YAMLError):
    """YAML nested deeper than :data:`MAX_YAML_DEPTH` (a ``yaml.YAMLError``, handled like a syntax error)."""


class YAMLAliasError(yaml.YAMLError):
    """YAML whose aliases expand it beyond :data:`MAX_YAML_ALIAS_NODES` nodes, or form a cycle (a
    ``yaml.YAMLError``, handled like a syntax error). ``problem`` holds the message, as PyYAML's errors do."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class FrontmatterError(ValueError):
    """The reference parser's errors (skills-ref), with its messages."""


def check_depth(text: str, limit: int = MAX_YAML_DEPTH) -> None:
    """Raise :class:`YAMLNestingError` when ``text`` nests collections deeper than ``limit``.

    The scanner is iterative, so counting its block and flow tokens is safe on any input; a scanning error is
    raised as the ``yaml.YAMLError`` the parser would raise anyway. Every level of nesting needs one of ``[``,
    ``{``, ``-``, ``:`` or ``?``, so text with fewer of them than ``limit`` is passed without scanning (the scan
    costs as much as the parse).
    """
    if sum(text.count(c) for c in "[{-:?") <= limit:
        return
    depth = 0
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        if isinstance(token, _OPEN):
            depth += 1
            if depth > limit:
                raise YAMLNestingError(f"YAML nested deeper than {limit} levels (line {token.start_mark.line + 1})")
        elif isinstance(token, _CLOSE):
            depth -= 1


def check_aliases(root: yaml.Node | None, limit: int = MAX_YAML_ALIAS_NODES) -> None:
    """Raise :class:`YAMLAliasError` when the aliases of the composed document ``root`` would expand it by more
    than ``limit`` nodes, or when an alias names a collection that holds it. The composed tree shares aliased
    nodes, so this costs one visit per distinct node."""
    if root is None:
        return
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:  # the nesting guard keeps this recursion shallow
        key = id(node)
        known = sizes.get(key)
        if known is not None:
            return known
        if key in open_nodes:
            raise YAMLAliasError(f"YAML alias at line {node.start_mark.line + 1} names a collection that holds it")
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(v) for v in node.value)
        open_nodes.discard(key)
        sizes[key] = total
        return total

    added = size(root) - len(sizes)
    if added > limit:
        raise YAMLAliasError(f"YAML aliases expand the document by {added} nodes, more than the {limit} accepted: "
                             "write the values out or use fewer anchors")


def _load_checked(text: str, loader_class: Any) -> Any:
    """Parse one document with ``loader_class``, refusing alias bombs before constructing it."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_aliases(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with the nesting and alias guards; every failure is a ``yaml.YAMLError``.

    Parsed by libyaml when PyYAML has it (several times faster: discovering 700 skills is most of a cold route);
    a document libyaml refuses is parsed again by the pure-Python loader, so error messages stay PyYAML's own.
    """
    check_depth(text)
    try:
        if "*" in text:  # no alias without an asterisk: the plain load cannot expand anything
            if _FAST is not None:
                try:
                    return _load_checked(text, _FAST)
                except YAMLAliasError:
                    raise
                except yaml.YAMLError:
                    pass
            return _load_checked(text, yaml.SafeLoader)
        if _FAST is not None:
            try:
                return yaml.load(text, Loader=_FAST)  # noqa: S506 - CSafeLoader is the safe loader
            except yaml.YAMLError:
                pass
        return yaml.safe_load(text)
    except RecursionError:  # the guard keeps well below the limit; a caller already deep in its stack may not
        raise YAMLNestingError("YAML nested too deeply to parse") from None


def compose(text: str) -> yaml.Node | None:
    """``yaml.compose`` (the node tree, scalars with their source text) with the nesting guard.

    Composed by libyaml when PyYAML has it (about 40 times faster; the pure-Python composer was most of the time
    a 10,000-skill library took to load), with a plain scalar's style given as None, as PyYAML gives it; a document
    libyaml refuses is composed again by the pure-Python loader, so errors stay PyYAML's own. The two agree node
    for node, marks included, on every frontmatter of the real corpora.
    """
    check_depth(text)
    try:
        if _FAST is not None:
            try:
                return _plain_style_none(yaml.compose(text, Loader=_FAST))
            except yaml.YAMLError:
                pass
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise YAMLNestingError("YAML nested too deeply to parse") from None


def _plain_style_none(root: yaml.Node | None) -> yaml.Node | None:
    """libyaml marks a plain scalar with style ``''`` where PyYAML has None (the profiles test ``style is None``
    to tell a plain ``null`` from a quoted one). Aliases share nodes and may form cycles: each node is seen once."""
    stack = [root] if root is not None else []
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.style == "":
                node.style = None
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return root


def load_with_nodes(text: str) -> tuple[yaml.Node | None, Any]:
    """(root node, constructed value) of a single YAML document, so callers can point at line numbers."""
    check_depth(text)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        check_aliases(node)
        return node, (loader.construct_document(node) if node is not None else None)
    except RecursionError:
        raise YAMLNestingError("YAML nested too deeply to parse") from None
    finally:
        loader.dispose()


def split_frontmatter(text: str) -> tuple[str, str]:
    """Split as the reference parser does: the text must start with ``---``; frontmatter is what lies between
    the first two ``---``."""
    if not text.startswith("---"):
        raise FrontmatterError("SKILL.md must start with YAML frontmatter (---)")
    parts = text.split("---", 2)
    if len(parts) < 3:
        raise FrontmatterError("SKILL.md frontmatter not properly closed with ---")
    return parts[1], parts[2].strip()


def quote_colon_values(front: str) -> str:
    """The client guide's retry for a common malformation: quote top-level values holding an unquoted colon."""
    fixed = []
    for line in front.split("\n"):
        match = _KEY_VALUE.match(line)
        value = match.group(2) if match else ""
        if match and ": " in value and value[0] not in "\"'|>[{":
            line = f"{match.group(1)}: {yaml.safe_dump(value, default_style=chr(34), width=1 << 30).strip()}"
        fixed.append(line)
    return "\n".join(fixed)


def yaml_error_text(exc: yaml.YAMLError) -> str:
    """A YAML error on one line."""
    return " ".join(str(exc).split())


def load_frontmatter(front: str) -> tuple[dict[str, Any], bool]:
    """YAML-load the frontmatter; returns (mapping with string keys, retried). Raises FrontmatterError when it is
    not YAML, not a mapping, or nested too deeply."""
    try:
        data = safe_load(front)
        retried = False
    except yaml.YAMLError as first:
        if isinstance(first, (YAMLNestingError, YAMLAliasError)):
            raise FrontmatterError(f"Invalid YAML in frontmatter: {yaml_error_text(first)}") from None
        try:
            data = safe_load(quote_colon_values(front))
            retried = True
        except yaml.YAMLError:
            raise FrontmatterError(f"Invalid YAML in frontmatter: {yaml_error_text(first)}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontmatterError("SKILL.md frontmatter must be a YAML mapping")
    return {str(k): v for k, v in data.items()}, retried
