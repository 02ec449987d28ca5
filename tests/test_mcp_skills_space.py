"""The MCP Skills extension's view of a library (router.serve.mcp_skills), on real folders, without a server:
skill paths, manifests with digests computed here from the bytes, what is and is not served, cursors."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from router.serve import mcp_extension, mcp_skills
from router.serve.mcp_skills import SkillsError, SkillSpace
from router.skill import Skill


def skill_folder(root: Path, folder: str, front: str, body: str = "# Steps\n") -> Skill:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    return Skill(name=folder, description="d", path=str(path), id=folder)


def digest(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    return {"digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


@pytest.fixture()
def library(tmp_path: Path) -> tuple[Path, list[Skill]]:
    root = tmp_path / "skills"
    pdf = skill_folder(root, "pdf", "name: pdf\ndescription: Fill PDF forms\nlicense: Apache-2.0\n"
                                    "metadata:\n  version: 2.1.0\n  released: 2026-01-02\n")
    folder = root / "pdf"
    (folder / "templates" / "regional").mkdir(parents=True)
    (folder / "templates" / "invoice.md").write_text("# Invoice\n")
    (folder / "templates" / "regional" / "eu invoice.md").write_text("# EU\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "fill.py").write_bytes(b"print('fill')\r\n")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (folder / "empty").mkdir()
    (folder / ".env").write_text("TOKEN=secret\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\x00")
    (folder / "huge.bin").write_bytes(b"x" * (mcp_skills.MAX_FILE_BYTES + 1))
    (tmp_path / "secret.txt").write_text("outside")
    (folder / "escape.md").symlink_to(tmp_path / "secret.txt")
    (folder / "linked-dir").symlink_to(tmp_path, target_is_directory=True)
    (folder / "alias.md").symlink_to(folder / "templates" / "invoice.md")
    os.mkfifo(folder / "pipe")
    # the same frontmatter name in another folder, and one whose name breaks the naming rule
    twin = skill_folder(root / "team-b", "pdf", "name: pdf\ndescription: The other PDF skill\n")
    twin = Skill(name="pdf-b", description="d", path=twin.path, id="pdf-b")
    bad = skill_folder(root, "Bad_Skill", "name: Bad_Skill\ndescription: Breaks the naming rule\n")
    none = skill_folder(root, "undescribed", "name: undescribed\n")
    wordy = skill_folder(root, "wordy", f"name: wordy\ndescription: {'w' * 1025}\n")
    return root, [pdf, twin, bad, none, wordy]


def test_skill_paths_names_and_the_manifest_from_the_files(library) -> None:
    root, skills = library
    space = SkillSpace(tuple(skills))
    assert [(e.path, e.name, e.problem == "") for e in space.entries] == [
        ("pdf", "pdf", True), ("team-b/pdf", "pdf", True), ("bad-skill", "bad-skill", False),
        ("undescribed", "undescribed", False), ("wordy", "wordy", False)]
    assert [e.uri for e in space.skills] == ["skill://pdf/SKILL.md", "skill://team-b/pdf/SKILL.md"]
    entry = space.skill_json(space.skill_at("skill://pdf/SKILL.md"))
    folder = root / "pdf"
    served = ["SKILL.md", "alias.md", "logo.png", "scripts/fill.py", "templates/invoice.md",
              "templates/regional/eu invoice.md"]
    assert entry == {
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Fill PDF forms", "license": "Apache-2.0",
                        "metadata": {"version": "2.1.0", "released": "2026-01-02"}},
        "resources": [{"uri": "skill://pdf/" + p.replace(" ", "%20"), **digest(folder / p)} for p in served]}
    assert entry["resources"][1]["digest"] == entry["resources"][4]["digest"]  # the link inside is its target


def test_a_skill_that_breaks_the_rules_is_refused_by_name(library) -> None:
    _, skills = library
    space = SkillSpace(tuple(skills))
    cases = {
        "skill://bad-skill/SKILL.md": "No skill is served at skill://bad-skill/SKILL.md: the folder of 'Bad_Skill' is "
                                      "not served as a skill because its frontmatter name 'Bad_Skill' is not a valid "
                                      "skill name (1-64 of a-z, 0-9 and single hyphens, as the Agent Skills "
                                      "specification requires); fix its SKILL.md and the server reloads it",
        "skill://wordy/SKILL.md": "No skill is served at skill://wordy/SKILL.md: the folder of 'wordy' is not served "
                                  "as a skill because its frontmatter description is 1025 characters long, more than "
                                  "the 1024 the Agent Skills specification allows; fix its SKILL.md and the server "
                                  "reloads it",
        "skill://undescribed/SKILL.md": "No skill is served at skill://undescribed/SKILL.md: the folder of "
                                        "'undescribed' is not served as a skill because its frontmatter has no "
                                        "description; fix its SKILL.md and the server reloads it",
        "skill://pfd/SKILL.md": "No skill is served at skill://pfd/SKILL.md: did you mean skill://pdf/SKILL.md?",
        "skill://pdf/templates/invoice.md": "skills/get takes the URI of a skill's SKILL.md "
                                            "(skill://<skill-path>/SKILL.md), got skill://pdf/templates/invoice.md",
        "file:///etc/passwd": "file:///etc/passwd is not a skill:// URI: this server serves skill files as "
                              "skill://<skill-path>/<file-path> (see resources/list or skills/list)",
    }
    for uri, message in cases.items():
        with pytest.raises(SkillsError) as caught:
            space.skill_at(uri)
        assert (str(caught.value), caught.value.code) == (message, -32602), uri
    assert space.skill_named("pdf").uri == "skill://pdf/SKILL.md"  # a name is a label: the first of the two
    for name, message in (("pfd", "No skill named 'pfd' is served: did you mean 'pdf'?"),
                          ("bad-skill", "No skill named 'bad-skill' is served: call skills/list for the skills this "
                                        "server serves"),
                          (3, "name must be a skill's name (text), got 3")):
        with pytest.raises(SkillsError) as caught:
            space.skill_named(name)
        assert str(caught.value) == message
    # its files are still resources, under its name in the library
    assert space.read("skill://bad-skill/SKILL.md")[0].startswith(b"---\nname: Bad_Skill")


def test_reads_are_confined_to_the_skill_folder(library) -> None:
    root, skills = library
    space = SkillSpace(tuple(skills))
    assert space.read("skill://pdf/scripts/fill.py") == (b"print('fill')\r\n", "text/x-python")
    assert space.read("skill://pdf/templates/regional/eu%20invoice.md") == (b"# EU\n", "text/markdown")
    assert space.read("skill://team-b/pdf/SKILL.md")[0] == (root / "team-b" / "pdf" / "SKILL.md").read_bytes()
    refused = {
        "skill://pdf/../undescribed/SKILL.md": "skill://pdf/../undescribed/SKILL.md holds an empty, '.' or '..' "
                                               "segment: address a skill's files by their path inside the skill "
                                               "folder",
        "skill://pdf/%2e%2e/secret.txt": "skill://pdf/%2e%2e/secret.txt holds an empty, '.' or '..' segment: "
                                         "address a skill's files by their path inside the skill folder",
        "skill://pdf/a%2fb": "skill://pdf/a%2fb holds a NUL, an encoded '/' or a '\\' in a segment",
        "skill://pdf/escape.md": "skill://pdf/escape.md leaves the folder of skill 'pdf' (a symlink out of it): only "
                                 "files inside a skill folder are served",
        "skill://pdf/linked-dir/secret.txt": "skill://pdf/linked-dir/secret.txt leaves the folder of skill 'pdf' (a "
                                             "symlink out of it): only files inside a skill folder are served",
        "skill://pdf/.env": "skill://pdf/.env is not served: files and folders named like '.env' (a leading '.', "
                            "or __pycache__) are kept out of skill resources",
        "skill://pdf/huge.bin": f"skill://pdf/huge.bin is larger than {mcp_skills.MAX_FILE_BYTES} bytes, the largest "
                                "file this server serves",
        "skill://pdf/pipe": "skill://pdf/pipe is not a regular file (a FIFO, a device or a socket)",
        "skill://pdf/nope.md": "skill 'pdf' has no file 'nope.md' (skill://pdf/nope.md): see its entry in skills/get "
                               "for the files it has",
        "skill://pdf/templates": "skill://pdf/templates is a folder of skill 'pdf': list it with "
                                 "resources/directory/read",
        "skill://pdf": "skill://pdf is a directory resource (a skill folder): read its SKILL.md at "
                       "skill://pdf/SKILL.md, or list it with resources/directory/read",
        "skill://nowhere/x.md": "No skill is served at skill://nowhere/x.md: call skills/list (or resources/list) "
                                "for the URIs this server serves",
    }
    for uri, message in refused.items():
        with pytest.raises(SkillsError) as caught:
            space.read(uri)
        assert (str(caught.value), caught.value.code) == (message, -32602), uri
        assert str(root) not in str(caught.value)


def test_directories_list_their_served_children(library) -> None:
    _, skills = library
    space = SkillSpace(tuple(skills))
    folder = Path(skills[0].path).parent
    assert space.directory("skill://pdf") == [
        {"uri": "skill://pdf/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown",
         "size": (folder / "SKILL.md").stat().st_size},
        {"uri": "skill://pdf/alias.md", "name": "alias.md", "mimeType": "text/markdown", "size": 10},
        {"uri": "skill://pdf/empty", "name": "empty", "mimeType": "inode/directory"},
        {"uri": "skill://pdf/logo.png", "name": "logo.png", "mimeType": "image/png", "size": 10},
        {"uri": "skill://pdf/scripts", "name": "scripts", "mimeType": "inode/directory"},
        {"uri": "skill://pdf/templates", "name": "templates", "mimeType": "inode/directory"},
    ]
    assert space.directory("skill://pdf/templates/regional") == [
        {"uri": "skill://pdf/templates/regional/eu%20invoice.md", "name": "eu invoice.md",
         "mimeType": "text/markdown", "size": 5}]
    assert space.directory("skill://pdf/empty") == []
    for uri, message in {"skill://pdf/SKILL.md": "skill://pdf/SKILL.md is not a directory resource: read it with "
                                                 "resources/read",
                         "skill://pdf/nope": "skill 'pdf' has no folder 'nope' (skill://pdf/nope)",
                         "skill://pdf/.git": "skill://pdf/.git is not served: folders named with a leading '.' or "
                                             "__pycache__ are kept out",
                         "skill://pdf/linked-dir": "skill://pdf/linked-dir leaves the folder of skill 'pdf' (a "
                                                   "symlink out of it): only files inside a skill folder are "
                                                   "served"}.items():
        with pytest.raises(SkillsError) as caught:
            space.directory(uri)
        assert str(caught.value) == message, uri


def test_pages_and_cursors(library, monkeypatch: pytest.MonkeyPatch) -> None:
    _, skills = library
    space = SkillSpace(tuple(skills))
    monkeypatch.setitem(mcp_extension.PAGE_SIZES, "skills/list", 1)
    monkeypatch.setitem(mcp_extension.PAGE_SIZES, "resources/list", 4)
    first = mcp_extension.skills_page(space, None)
    second = mcp_extension.skills_page(space, first["nextCursor"])
    assert [s["uri"] for s in first["skills"] + second["skills"]] == ["skill://pdf/SKILL.md",
                                                                     "skill://team-b/pdf/SKILL.md"]
    assert "nextCursor" not in second and first["ttlMs"] == 60_000 and first["cacheScope"] == "public"
    uris, cursor, pages = [], None, 0
    while True:
        page, cursor = mcp_extension.resources_page(space, cursor)
        pages += 1
        uris += [r["uri"] for r in page]
        assert len(page) == 4 or cursor is None
        if cursor is None:
            break
    expected = ([f.uri for f in space.files(space.entries[0])] + ["skill://team-b/pdf/SKILL.md",
                "skill://bad-skill/SKILL.md", "skill://undescribed/SKILL.md", "skill://wordy/SKILL.md"])
    assert uris == expected and pages == 3  # 6 + 4 files, 4 a page
    restart = "call skills/list without a cursor to start from the first page"
    cases = {"zzz": f"cursor 'zzz' is not one this server issued for skills/list: {restart}",
             mcp_extension.make_cursor("resources/list", space.token, [0, 0]):
                 "was issued by resources/list, not skills/list",
             mcp_extension.make_cursor("skills/list", "0000", [1]): "belongs to a listing from before the library was "
                                                                 "reloaded",
             mcp_extension.make_cursor("skills/list", space.token, [1], "a request"): "was issued for a listing ranked "
                                                                                   "for another request"}
    for cursor, message in cases.items():
        with pytest.raises(SkillsError) as caught:
            mcp_extension.skills_page(space, cursor)
        assert message in str(caught.value) and str(caught.value).endswith(restart.replace(
            "call", "pass the same _meta['skill-router/query'] as the first page, or call")
            if "ranked" in message else restart)
    with pytest.raises(SkillsError, match="must be the text of a nextCursor"):
        mcp_extension.skills_page(space, 7)


def test_a_skill_beyond_the_limits_is_not_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = skill_folder(tmp_path, "many-files", "name: many-files\ndescription: Too many files\n")
    for n in range(mcp_skills.MAX_SKILL_FILES):
        (tmp_path / "many-files" / f"f{n:03}.txt").write_text("x")
    small = skill_folder(tmp_path, "small", "name: small\ndescription: One file\n")
    space = SkillSpace((big, small))
    assert [s["uri"] for s in mcp_extension.skills_page(space, None)["skills"]] == ["skill://small/SKILL.md"]
    with pytest.raises(SkillsError) as caught:
        space.skill_json(space.skill_at("skill://many-files/SKILL.md"))
    size = sum(p.stat().st_size for p in (tmp_path / "many-files").iterdir())
    assert str(caught.value) == (f"skill skill://many-files/SKILL.md is not served: it has 513 files of {size} bytes, "
                                 "beyond the extension's limits of 512 files and 16777216 bytes per skill")


def test_digests_follow_the_files(tmp_path: Path) -> None:
    skill = skill_folder(tmp_path, "notes", "name: notes\ndescription: Notes\n")
    space = SkillSpace((skill,))
    entry = space.skill_at("skill://notes/SKILL.md")
    before = space.skill_json(entry)["resources"]
    (tmp_path / "notes" / "extra.md").write_text("more\n")
    Path(skill.path).write_text("---\nname: notes\ndescription: Notes\n---\n# Changed, longer\n")
    after = space.skill_json(entry)["resources"]
    assert after == [{"uri": "skill://notes/SKILL.md", **digest(Path(skill.path))},
                     {"uri": "skill://notes/extra.md", **digest(tmp_path / "notes" / "extra.md")}]
    assert after[0] != before[0]


def test_ranking_meta_is_checked() -> None:
    assert mcp_extension.ranking_of(None, 50, 8000) == (None, None)
    assert mcp_extension.ranking_of({"skill-router/query": "rain?", "skill-router/k": 3}, 50, 8000) == ("rain?", 3)
    cases = {("", None): "_meta['skill-router/query'] must be the user's request as non-empty text, got \"\"",
             (5, None): "_meta['skill-router/query'] must be the user's request as non-empty text, got 5",
             ("x" * 8001, None): "_meta['skill-router/query'] is 8001 characters long, more than 8000: send the "
                                 "request itself, not the whole conversation",
             ("rain?", 0): "_meta['skill-router/k'] must be a whole number from 1 to 50, got 0",
             ("rain?", True): "_meta['skill-router/k'] must be a whole number from 1 to 50, got true",
             (None, 3): "_meta['skill-router/k'] ranks a listing only with _meta['skill-router/query'] (the user's "
                        "request): add the request, or drop the k"}
    for (query, k), message in cases.items():
        meta = {key: value for key, value in (("skill-router/query", query), ("skill-router/k", k))
                if value is not None}
        with pytest.raises(SkillsError) as caught:
            mcp_extension.ranking_of(meta, 50, 8000)
        assert str(caught.value) == message


def test_a_reload_rereads_only_the_skill_files_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = skill_folder(tmp_path, "one", "name: one\ndescription: First\n")
    two = skill_folder(tmp_path, "two", "name: two\ndescription: Second\n")
    cache = mcp_skills.FileCache()
    SkillSpace((one, two), cache)
    read: list[str] = []
    original = mcp_skills.read_frontmatter
    monkeypatch.setattr(mcp_skills, "read_frontmatter", lambda skill: read.append(skill.name) or original(skill))
    Path(two.path).write_text("---\nname: two\ndescription: Second, edited\n---\n")
    space = SkillSpace((one, two), cache)
    assert read == ["two"]
    assert [e.frontmatter for e in space.skills] == [{"name": "one", "description": "First"},
                                                     {"name": "two", "description": "Second, edited"}]
