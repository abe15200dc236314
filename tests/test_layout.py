"""Stick layouts: the torch-spyre example, properties over random shapes, the IR attribute."""

import dataclasses
import io
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, TensorType, f16
from xdsl.ir import Dialect
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from spyre_ir.dialects.stick_layout import (
    StickLayoutAttr,
    tensor_layout,
    verify_tensor_layout,
)
from spyre_ir.layout import (
    StickLayout,
    default_layout,
    device_size_bytes,
    device_to_host_index,
    element_bytes,
    generic_layout,
    host_to_device_offsets,
    layout_sticked_on,
    padding_elements,
    stickify,
    unstickify,
    validate,
)

EXAMPLE_TEXT = (
    "#spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2],"
    " strides = [150, 64, 15000, 1], pad = 42>"
)
DTYPES = ["f16", "bf16", "f32", "i1", "i8", "i32", "i64"]
# Keeps each example small (the offsets of every element are materialised) while dims
# still range over 1..300.
MAX_ELEMENTS = 1 << 16


@st.composite
def shapes(draw: st.DrawFn) -> tuple[int, ...]:
    """Rank 1-4, dims 1..300, at most MAX_ELEMENTS elements. The last (stick) dim is
    drawn first, so it always gets the full range and exercises padding."""
    rank = draw(st.integers(1, 4))
    budget = MAX_ELEMENTS
    reversed_dims = []
    for _ in range(rank):
        dim = draw(st.integers(1, min(300, budget)))
        budget //= dim
        reversed_dims.append(dim)
    return tuple(reversed(reversed_dims))


@st.composite
def layouts(draw: st.DrawFn) -> StickLayout:
    """Default layouts, and layouts sticked on another dim."""
    shape = draw(shapes())
    dtype = draw(st.sampled_from(DTYPES))
    if draw(st.booleans()):
        return default_layout(shape, dtype)
    return layout_sticked_on(shape, dtype, draw(st.integers(0, len(shape) - 1)))


def host_array(layout: StickLayout) -> np.ndarray:
    """Distinct values (where the dtype allows), so a misplaced element shows."""
    dtype = {1: np.int8, 2: np.float16, 4: np.float32, 8: np.int64}[layout.elem_bytes]
    values = np.arange(math.prod(layout.host_shape))
    if dtype == np.float16:
        values %= 2048  # integers up to 2048 are exact in f16 (and nothing overflows)
    return values.astype(dtype).reshape(layout.host_shape)


# The torch-spyre example and small hand-checked cases.


def test_torch_spyre_example_exactly():
    layout = default_layout([5, 100, 150], "f16")
    assert layout.stick_dim == 2
    assert layout.device_sizes == (100, 3, 5, 64)
    assert layout.stride_map == (150, 64, 15000, 1)
    assert layout.dim_map == (1, 2, 0, 2)
    assert padding_elements(layout) == 42
    assert device_size_bytes(layout) == 100 * 3 * 5 * 64 * 2
    assert validate(layout, (5, 100, 150), 2) == []
    assert default_layout((5, 100, 150), 2) == layout


@pytest.mark.parametrize(
    ("shape", "dtype", "device_sizes", "dim_map", "stride_map"),
    [
        ([100], "f16", (2, 64), (0, 0), (64, 1)),
        ([3, 100], "f32", (4, 3, 32), (1, 0, 1), (32, 100, 1)),
        ([2, 3, 4, 70], "f16", (3, 4, 2, 2, 64), (1, 2, 3, 0, 3), (280, 70, 64, 840, 1)),
        ([7, 1], "i8", (1, 7, 128), (1, 0, 1), (128, 1, 1)),
    ],
)
def test_default_rule_per_rank(shape, dtype, device_sizes, dim_map, stride_map):
    layout = default_layout(shape, dtype)
    assert (layout.device_sizes, layout.dim_map, layout.stride_map) == (
        device_sizes,
        dim_map,
        stride_map,
    )


def test_matmul_b_sticked_on_k_is_laid_out_like_its_transpose_by_default():
    b_on_k = layout_sticked_on([100, 70], "f16", stick_dim=0)
    transpose = default_layout([70, 100], "f16")
    assert b_on_k.stick_dim == 0
    assert b_on_k.device_sizes == transpose.device_sizes == (2, 70, 64)
    assert b_on_k.stride_map == (64 * 70, 1, 70)
    b = np.arange(7000, dtype=np.float16).reshape(100, 70)
    assert np.array_equal(stickify(b, b_on_k), stickify(b.T.copy(), transpose))


def test_stickify_places_elements_in_sticks_and_pads():
    layout = default_layout([2, 70], "f16")  # device [2 sticks, 2 rows, 64]
    host = np.arange(140, dtype=np.float16).reshape(2, 70) + 1
    device = stickify(host, layout, pad_value=-1)
    assert device.shape == (2 * 2 * 64,)
    for r, c in [(0, 0), (1, 5), (0, 63), (0, 64), (1, 69)]:
        assert device[(c // 64) * 128 + r * 64 + c % 64] == host[r, c]
    assert (device[128 + 6 : 128 + 64] == -1).all()  # row 0, second stick, past c = 69


def test_device_to_host_index_on_the_example():
    layout = default_layout([5, 100, 150], "f16")
    offset = 99 * (3 * 5 * 64) + 2 * (5 * 64) + 4 * 64 + 21  # device (99, 2, 4, 21)
    assert device_to_host_index(layout, offset) == (4, 99, 2 * 64 + 21)
    assert device_to_host_index(layout, offset + 1) is None  # element 150: padding
    with pytest.raises(ValueError, match="outside"):
        device_to_host_index(layout, device_size_bytes(layout))


@pytest.mark.parametrize(
    ("dtype", "per_stick"),
    [("f16", 64), ("bf16", 64), ("f32", 32), ("i8", 128), ("i32", 32), ("i64", 16), ("i1", 128)],
)
def test_elements_per_stick(dtype, per_stick):
    assert default_layout([3], dtype).elems_per_stick == per_stick


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="unknown element type"):
        element_bytes("f128")
    with pytest.raises(ValueError, match="stick"):
        element_bytes(3)
    with pytest.raises(ValueError, match="rank >= 1"):
        default_layout([], "f16")
    with pytest.raises(ValueError, match="permutation"):
        generic_layout([2, 3], "f16", [0, 0])
    with pytest.raises(ValueError, match="shape"):
        stickify(np.zeros((2, 3)), default_layout([3, 2], "f32"))
    broken = dataclasses.replace(default_layout([4, 4], "f16"), device_sizes=(1, 5, 64))
    with pytest.raises(ValueError, match="invalid stick layout"):
        host_to_device_offsets(broken)


# Properties over random shapes and dtypes.


@settings(max_examples=100, deadline=None)
@given(layouts())
def test_every_host_element_has_its_own_slot_and_the_rest_is_stick_padding(layout):
    shape = layout.host_shape
    assert validate(layout, shape, layout.elem_bytes) == []
    offsets = host_to_device_offsets(layout)
    assert offsets.shape == (math.prod(shape),)
    assert len(np.unique(offsets)) == offsets.size
    assert offsets.min() >= 0 and offsets.max() < layout.device_elements
    rows = math.prod(shape) // shape[layout.stick_dim]
    assert layout.device_elements - offsets.size == rows * padding_elements(layout)
    assert device_size_bytes(layout) == layout.device_elements * layout.elem_bytes


@settings(max_examples=100, deadline=None)
@given(layouts())
def test_padding_is_exactly_what_whole_sticks_need(layout):
    per_stick = layout.elems_per_stick
    assert per_stick * layout.elem_bytes == 128
    stick_size = layout.host_shape[layout.stick_dim]
    assert padding_elements(layout) == -stick_size % per_stick
    assert 0 <= padding_elements(layout) < per_stick


@settings(max_examples=100, deadline=None)
@given(layouts(), st.data())
def test_stickify_unstickify_round_trip(layout, data):
    host = host_array(layout)
    device = stickify(host, layout, pad_value=7)
    assert device.size == layout.device_elements
    assert np.array_equal(unstickify(device, layout), host)
    offsets = host_to_device_offsets(layout)
    # stickify moves whole axes by reshapes; the offsets say element by element where
    # each host element belongs, so they are its independent reference.
    assert np.array_equal(device[offsets], host.reshape(-1))
    padding = np.ones(device.size, dtype=bool)
    padding[offsets] = False
    assert (device[padding] == 7).all()
    flat = data.draw(st.integers(0, host.size - 1))
    index = np.unravel_index(flat, layout.host_shape)
    assert device_to_host_index(layout, int(offsets[flat])) == tuple(map(int, index))
    if padding.any():
        slot = int(np.flatnonzero(padding)[0])
        assert device_to_host_index(layout, slot) is None


def _break_stick(layout: StickLayout) -> StickLayout:
    return dataclasses.replace(
        layout, device_sizes=layout.device_sizes[:-1] + (layout.elems_per_stick // 2,)
    )


def _grow_device_dim(layout: StickLayout, j: int) -> StickLayout:
    sizes = list(layout.device_sizes)
    sizes[j] += 1
    return dataclasses.replace(layout, device_sizes=tuple(sizes))


def _shift_stride(layout: StickLayout, j: int) -> StickLayout:
    strides = list(layout.stride_map)
    strides[j] += 1
    return dataclasses.replace(layout, stride_map=tuple(strides))


@settings(max_examples=100, deadline=None)
@given(layouts(), st.data())
def test_validate_catches_broken_layouts(layout, data):
    shape, nbytes = layout.host_shape, layout.elem_bytes
    j = data.draw(st.integers(0, len(layout.device_sizes) - 1))
    stick_count_dim = layout.walkers(layout.stick_dim)[-1]
    assert any("not 128" in p for p in validate(_break_stick(layout), shape, nbytes))
    assert validate(_shift_stride(layout, j), shape, nbytes)
    if j == stick_count_dim:
        grown = validate(_grow_device_dim(layout, j), shape, nbytes)
        assert any("whole" in p for p in grown)
    elif j != len(layout.device_sizes) - 1:
        grown = validate(_grow_device_dim(layout, j), shape, nbytes)
        assert any(f"of host dim {layout.dim_map[j]}" in p for p in grown)
    other_shape = shape[:-1] + (shape[-1] + 1,)
    assert any("layout is for host shape" in p for p in validate(layout, other_shape, nbytes))
    other_width = 4 if nbytes != 4 else 2
    assert any("not 128" in p for p in validate(layout, shape, other_width))


# The #spyre.stick attribute.


@pytest.fixture
def ctx() -> Context:
    context = Context()
    context.load_dialect(Builtin)
    context.load_dialect(Dialect("spyre", [], [StickLayoutAttr]))
    return context


def _printed(attr) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_attribute(attr)
    return stream.getvalue()


def test_attribute_print_parse_round_trip(ctx):
    attr = Parser(ctx, EXAMPLE_TEXT).parse_attribute()
    assert isinstance(attr, StickLayoutAttr)
    assert _printed(attr) == EXAMPLE_TEXT
    layout = default_layout([5, 100, 150], "f16")
    assert attr == StickLayoutAttr.from_layout(layout)
    assert attr.to_layout((5, 100, 150), 2) == layout


def test_attribute_rejects_malformed_parameters_at_parse_time(ctx):
    text = "#spyre.stick<dim = 0, device = [2, 64], map = [0], strides = [64, 1], pad = 0>"
    with pytest.raises(ParseError, match="equal length"):
        Parser(ctx, text).parse_attribute()


def test_tensor_with_valid_layout_verifies(ctx):
    t = Parser(ctx, f"tensor<5x100x150xf16, {EXAMPLE_TEXT}>").parse_type()
    assert isinstance(t, TensorType)
    verify_tensor_layout(t)
    assert tensor_layout(t) == default_layout([5, 100, 150], "f16")


def test_tensor_without_encoding_is_left_alone():
    t = TensorType(f16, [5, 100, 150])
    verify_tensor_layout(t)
    assert tensor_layout(t) is None


@pytest.mark.parametrize(
    ("tensor", "message"),
    [
        # An f16 layout on f32 elements: 64 x 4 bytes is a 256-byte stick.
        (f"tensor<5x100x150xf32, {EXAMPLE_TEXT}>", "256 bytes, not 128"),
        (f"tensor<6x100x150xf16, {EXAMPLE_TEXT}>", "cover 5 of host dim 0, which has 6"),
        (f"tensor<5x100x200xf16, {EXAMPLE_TEXT}>", "padded to 192"),
        (f"tensor<5x100x150xf16, {EXAMPLE_TEXT.replace('42', '41')}>", "pad = 41"),
        (f"tensor<5x100x150xf64, {EXAMPLE_TEXT}>", "unknown element type 'f64'"),
    ],
)
def test_verify_tensor_layout_rejects_layouts_that_do_not_fit(ctx, tensor, message):
    t = Parser(ctx, tensor).parse_type()
    assert isinstance(t, TensorType)
    with pytest.raises(VerifyException, match=message):
        verify_tensor_layout(t)
