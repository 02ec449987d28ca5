"""Committing the index in PostgreSQL from a running server: ``POST /v1/reindex`` on ``serve --index-url``.

The replica that answers commits a generation of the library as its skill folders hold it now, exactly as
``skill-router index --index-url`` would (:func:`router.pgstore.publish`: only the texts the embedding cache lacks
are embedded, the generation is one transaction, and its ``NOTIFY`` makes every replica, this one included, swap
to it). The endpoint is guarded as it is with the file store (the bearer token of ``--token-file``, the loopback
Host check). A server stays a reader of the schema: a database whose schema is not the one this version reads is
refused with the command that migrates it, and a database user that may not write is named as such.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from router.errors import ConfigError

if TYPE_CHECKING:
    from router.index import LibrarySource


def publish_library(source: LibrarySource) -> int:
    """Commit the library ``source`` read (not indexed) as a new generation of its database unless the current
    one already holds it; returns how many texts were embedded."""
    from psycopg import errors

    from router import pgstore

    url = source.config.index_url
    if not url:
        raise ConfigError("reindexing into a database needs --index-url (or index_url in the config)")
    db = pgstore.database(url)
    with db.connection() as conn:
        pgstore.check_schema(conn, url)  # a server never migrates: 'skill-router index' does
    try:
        report = pgstore.publish(db, source, source.spec.key)
    except errors.InsufficientPrivilege as exc:
        raise ConfigError(f"the index database user may not write ({pgstore._first_line(exc)}): reindex with a "
                          f"user that owns the index tables in --index-url, or run 'skill-router index "
                          f"--index-url ...' as one") from None
    return report.embedded
