"""The typed work plans (spyre_ir/dialects/dataflow_plan.py) built from Python: what the
passes make is verified as what a user writes, and reads back by field."""

import pytest
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects import dataflow


def test_plans_read_back_their_fields() -> None:
    rows = dataflow.RowsPlanAttr.of(2, 8)
    assert (rows.kind, rows.row_dims.data, rows.core_count) == ("rows", 2, 8)
    assert rows.with_cores(3) == dataflow.RowsPlanAttr.of(2, 3)
    mm = dataflow.MatmulPlanAttr.of(32, (16, 1, 2))
    assert (mm.kind, mm.split_mnk, mm.core_count) == ("matmul", (16, 1, 2), 32)
    assert (mm.batch_split, mm.split_cores) == (None, 32)
    bmm = dataflow.MatmulPlanAttr.of(32, (2, 1, 1), 16)
    assert (bmm.split_mnk, bmm.batch_split, bmm.split_cores) == ((2, 1, 1), 16, 32)
    assert bmm != dataflow.MatmulPlanAttr.of(32, (2, 1, 1)) and bmm.with_cores(32) == bmm
    att = dataflow.AttentionPlanAttr.from_values(cores=4)
    assert att.value("tile") is None and att.value("split_kv") is None
    assert dataflow.KtirPlanAttr.from_values(grid=(2, 2)).core_count is None


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: dataflow.RowsPlanAttr.of(1, 0), "plan cores = 0 must be >= 1"),
        (lambda: dataflow.GatherPlanAttr.of(65, 1), r"plan row_dims = 65 must be in \[0, 64\]"),
        (lambda: dataflow.MatmulPlanAttr.of(4, (2, 2)), r"plan split must be \[m, n, k\]"),
        (lambda: dataflow.MatmulPlanAttr.of(4, (2, 0, 1)), "must hold integers >= 1"),
        (lambda: dataflow.MatmulPlanAttr.of(8, (2, 1, 1), 2), r"is 4 cores, not cores = 8"),
        (lambda: dataflow.MatmulPlanAttr.of(2, (2, 1, 1), 0), "plan split_b = 0 must be >= 1"),
        (
            lambda: dataflow.AttentionPlanAttr.from_values(cores=2, tile=(1, 2)),
            r"plan tile must be \[heads, rows, keys\]",
        ),
    ],
)
def test_a_malformed_plan_fails_its_own_verifier(make, message) -> None:
    with pytest.raises(VerifyException, match=message):
        make()
