"""The tool's private key file: made once, whole, and the same key for every process of
the course (the LMS knows one public key)."""
from autograder.service.lms import lti_tool


def test_a_process_starting_while_the_key_is_made_reads_the_whole_key(tmp_path, monkeypatch):
    """Two processes start at once with no key file. The second one asks while the first
    is still making its key: each must read one whole key, the same one, and no
    half-made file may be left behind."""
    path, made, seen = tmp_path / "state" / "lti-tool-key.pem", [], []
    real = lti_tool._new_key_pem

    def slow_first_key():
        mine = real()
        made.append(mine)
        if len(made) == 1:  # the other process asks now, before this key is in place
            seen.append(lti_tool.private_key_pem(path))
        return mine

    monkeypatch.setattr(lti_tool, "_new_key_pem", slow_first_key)
    monkeypatch.delenv("LTI_PRIVATE_KEY", raising=False)
    first = lti_tool.private_key_pem(path)
    assert seen == [first] and b"PRIVATE KEY" in first
    assert first == made[-1]  # the key that was in place first: the other process's
    assert lti_tool.public_jwk(first)["kid"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_key_is_made_where_the_filesystem_has_no_hard_links(tmp_path, monkeypatch):
    """Some mounts (SMB, some bind mounts) refuse hard links: the key is then created in
    place, once, as before."""
    def no_links(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(lti_tool.os, "link", no_links)
    monkeypatch.delenv("LTI_PRIVATE_KEY", raising=False)
    path = tmp_path / "lti-tool-key.pem"
    first = lti_tool.private_key_pem(path)
    assert b"PRIVATE KEY" in first and lti_tool.private_key_pem(path) == first
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
