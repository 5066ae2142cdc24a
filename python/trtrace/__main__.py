"""``python -m trtrace ARGS``: the same as ``trtrace ARGS`` (e.g. ``python -m trtrace capture -- python app.py``)."""

from ._launch import trtrace

trtrace()
