"""The corpus runner's modules (run_corpus, exports) are importable by the corpus test."""
import pathlib
import sys

sys.path[:0] = [str(pathlib.Path(__file__).resolve().parent), str(pathlib.Path(__file__).resolve().parents[1])]
