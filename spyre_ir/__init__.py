"""spyre-ir: an MLIR-style compiler, runtime and simulated card for IBM's Spyre.

Importing the package stays light (the tools start without torch). When torch is already
imported, the "spyre" torch device is set up here (unless another PrivateUse1 backend
holds the slot); otherwise torch's device-backend autoload (entry point group
"torch.backends") sets it up during ``import torch``.
"""

import sys

from spyre_ir import xdsl_fixes as _xdsl_fixes

_xdsl_fixes.apply()
del _xdsl_fixes

if "torch" in sys.modules:
    from spyre_ir.runtime.device import setup as _setup_device

    _setup_device(required=False)
    del _setup_device
