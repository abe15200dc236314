"""lit configuration: every .mlir file here is a test, run with spyre-opt and filecheck."""

import os

import lit.formats

config.name = "spyre-ir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Output"]
config.environment["PATH"] = os.environ["PATH"]
# A Python traceback in any tool output is a bug even when the test otherwise passes.
config.substitutions.append(("%no-traceback", "not grep -q Traceback"))
