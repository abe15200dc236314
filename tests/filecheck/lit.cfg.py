"""lit configuration: every .mlir file here is a test, run with spyre-opt and filecheck."""

import os

import lit.formats

config.name = "spyre-ir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Output"]
config.environment["PATH"] = os.environ["PATH"]
# spyre-opt imports the spyre_ir of this tree, not whichever tree the venv was installed
# from (a git worktree shares its venv with the main checkout).
_root = os.path.dirname(os.path.dirname(config.test_source_root))
config.environment["PYTHONPATH"] = os.pathsep.join(
    [_root] + [p for p in [os.environ.get("PYTHONPATH")] if p]
)
# A Python traceback in any tool output is a bug even when the test otherwise passes.
config.substitutions.append(("%no-traceback", "not grep -q Traceback"))
