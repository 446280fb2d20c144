"""Reading notebooks fast, the way nbgrader sees them.

Grading one submission must take about a second, and importing nbformat and
nbgrader costs more than that, so version-4 notebooks (what Jupyter has
written since 2015) are read as plain JSON; older versions go through
``nbformat``'s converter. The nbgrader helpers below repeat
``nbgrader.utils`` (0.9.6) line for line; ``tests/grading/test_notebook.py``
checks that they agree with nbgrader's own on real notebooks.
"""
import hashlib


def cells(raw):
    """Cells of a parsed notebook as dicts with ``cell_type``, ``source`` (str), ``metadata``.

    Raises ValueError when the notebook's structure is not a notebook's.
    """
    if raw.get("nbformat") != 4:
        import nbformat  # only for notebooks older than version 4

        raw = nbformat.convert(nbformat.from_dict(raw), 4)
    found = raw.get("cells")
    if not isinstance(found, list):
        raise ValueError("it has no list of cells")
    return [_normal(c) for c in found if isinstance(c, dict)]


def _normal(cell):
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    metadata = cell.get("metadata")
    return {"cell_type": cell.get("cell_type"), "source": source if isinstance(source, str) else "",
            "metadata": metadata if isinstance(metadata, dict) else {}}


def nbgrader_meta(cell):
    """The cell's ``metadata.nbgrader`` dict ({} when missing or malformed)."""
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def is_grade(cell):
    return bool(nbgrader_meta(cell).get("grade", False))


def is_solution(cell):
    return bool(nbgrader_meta(cell).get("solution", False))


def is_locked(cell):
    if is_solution(cell):
        return False
    if is_grade(cell):
        return True
    return bool(nbgrader_meta(cell).get("locked", False))


def checksum(cell):
    """nbgrader's cell checksum (``nbgrader.utils.compute_checksum``): md5 hex digest.

    Raises KeyError/ValueError when the nbgrader metadata lacks a grade_id or points.
    """
    m = hashlib.md5()
    for part in (cell["source"], cell["cell_type"], str(is_grade(cell)),
                 str(is_solution(cell)), str(is_locked(cell)),
                 nbgrader_meta(cell)["grade_id"]):
        m.update(str(part).encode("utf-8"))
    if is_grade(cell):
        m.update(str(float(nbgrader_meta(cell)["points"])).encode("utf-8"))
    return m.hexdigest()
