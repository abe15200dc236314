"""`#spyre.stick<...>`: a tensor's device stick layout, carried as the tensor type's encoding.

    tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64],
                                       map = [1, 2, 0, 2], strides = [150, 64, 15000, 1],
                                       pad = 42>>

`dim` is the host stick dim, `device` the device dim sizes (outermost first, the last is
the elements per stick), `map` the host dim each device dim walks, `strides` the host
stride of one step along each device dim, `pad` the padding elements per stick-dim row.
The maths lives in `spyre_ir.layout`; this module is its IR face. The host shape and the
element width are not repeated here: they are the tensor type's own, which is why a
layout becomes a `StickLayout` only together with them (`to_layout`, `tensor_layout`).

The attribute belongs to the `spyre` dialect, which registers it (spyre_ir/dialects/spyre.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, TensorType
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from spyre_ir.layout import StickLayout, default_layout, element_bytes, padding_elements, validate


def _int_array(values: Iterable[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr(IntAttr(int(v)) for v in values)


def _ints(array: ArrayAttr[IntAttr]) -> tuple[int, ...]:
    return tuple(a.data for a in array.data)


@irdl_attr_definition
class StickLayoutAttr(ParametrizedAttribute):
    """The stick layout of one tensor; see the module docstring for the syntax.

    The attribute verifies only its own structure (equal lengths, signs); whether it fits
    a tensor is `verify_tensor_layout`'s job, since only the tensor knows its shape.
    """

    name = "spyre.stick"

    stick_dim: IntAttr
    device_sizes: ArrayAttr[IntAttr]
    dim_map: ArrayAttr[IntAttr]
    stride_map: ArrayAttr[IntAttr]
    padding: IntAttr

    def __init__(
        self,
        stick_dim: int,
        device_sizes: Iterable[int],
        dim_map: Iterable[int],
        stride_map: Iterable[int],
        padding: int,
    ):
        super().__init__(
            IntAttr(stick_dim),
            _int_array(device_sizes),
            _int_array(dim_map),
            _int_array(stride_map),
            IntAttr(padding),
        )

    @classmethod
    def from_layout(cls, layout: StickLayout) -> StickLayoutAttr:
        return cls(
            layout.stick_dim,
            layout.device_sizes,
            layout.dim_map,
            layout.stride_map,
            padding_elements(layout),
        )

    def to_layout(self, host_shape: Sequence[int], elem_bytes: int) -> StickLayout:
        """The layout of a host tensor of `host_shape` with `elem_bytes`-byte elements.

        `pad` is not an input: it follows from the sizes, and `verify_tensor_layout`
        checks that it does.
        """
        return StickLayout(
            host_shape=tuple(host_shape),
            elem_bytes=elem_bytes,
            stick_dim=self.stick_dim.data,
            device_sizes=_ints(self.device_sizes),
            dim_map=_ints(self.dim_map),
            stride_map=_ints(self.stride_map),
        )

    def verify(self) -> None:
        problem = _structure_problem(
            self.stick_dim.data,
            _ints(self.device_sizes),
            _ints(self.dim_map),
            _ints(self.stride_map),
            self.padding.data,
        )
        if problem:
            raise VerifyException(f"#spyre.stick: {problem}")

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(
                f"dim = {self.stick_dim.data}, device = {list(_ints(self.device_sizes))},"
                f" map = {list(_ints(self.dim_map))},"
                f" strides = {list(_ints(self.stride_map))}, pad = {self.padding.data}"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            stick_dim = _parse_int_field(parser, "dim")
            parser.parse_punctuation(",")
            device_sizes = _parse_list_field(parser, "device")
            parser.parse_punctuation(",")
            dim_map = _parse_list_field(parser, "map")
            parser.parse_punctuation(",")
            stride_map = _parse_list_field(parser, "strides")
            parser.parse_punctuation(",")
            padding = _parse_int_field(parser, "pad")
        # Report a malformed attribute at its source position, not as a bare exception.
        problem = _structure_problem(stick_dim, device_sizes, dim_map, stride_map, padding)
        if problem:
            parser.raise_error(f"#spyre.stick: {problem}", start, parser.pos)
        return (
            IntAttr(stick_dim),
            _int_array(device_sizes),
            _int_array(dim_map),
            _int_array(stride_map),
            IntAttr(padding),
        )


def _structure_problem(
    stick_dim: int,
    device_sizes: Sequence[int],
    dim_map: Sequence[int],
    stride_map: Sequence[int],
    padding: int,
) -> str | None:
    """What makes the parameters no stick layout of any tensor, or None."""
    n = len(device_sizes)
    if not n == len(dim_map) == len(stride_map) or n < 2:
        return (
            f"device, map and strides need one equal length >= 2, have {n},"
            f" {len(dim_map)}, {len(stride_map)}"
        )
    if min(device_sizes) < 1 or min(stride_map) < 1:
        return "device sizes and strides must be >= 1"
    if min(dim_map) < 0 or stick_dim < 0 or padding < 0:
        return "dim, map and pad must be >= 0"
    return None


def _parse_int_field(parser: AttrParser, keyword: str) -> int:
    parser.parse_keyword(keyword, " in #spyre.stick")
    parser.parse_punctuation("=")
    return parser.parse_integer(allow_boolean=False)


def _parse_list_field(parser: AttrParser, keyword: str) -> list[int]:
    parser.parse_keyword(keyword, " in #spyre.stick")
    parser.parse_punctuation("=")
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
    )


def tensor_layout(t: TensorType) -> StickLayout | None:
    """The stick layout a tensor type carries, or None if its encoding is no stick layout.

    Raises VerifyException if the tensor cannot have one (dynamic shape, element type with
    no device storage width); the layout itself is not validated here.
    """
    encoding = t.encoding
    if not isinstance(encoding, StickLayoutAttr):
        return None
    shape = t.get_shape()
    if any(d < 0 for d in shape):
        raise VerifyException(f"{t}: a stick layout needs a static shape")
    try:
        elem_bytes = element_bytes(str(t.element_type))
    except ValueError as e:
        raise VerifyException(f"{t}: {e}") from None
    return encoding.to_layout(shape, elem_bytes)


def layout_or_default(t: TensorType) -> StickLayout:
    """Where a tensor of type `t` lives in device memory: the stick layout it carries,
    else torch-spyre's default layout of its shape (a rank-0 tensor is held as [1])."""
    layout = tensor_layout(t)
    if layout is not None:
        return layout
    shape = tuple(t.get_shape()) or (1,)
    return default_layout(shape, element_bytes(str(t.element_type)))


def verify_tensor_layout(t: TensorType) -> None:
    """Raise VerifyException if `t`'s stick layout encoding does not fit its shape/type."""
    layout = tensor_layout(t)
    if layout is None:
        return
    problems = validate(layout, layout.host_shape, layout.elem_bytes)
    if not problems:
        assert isinstance(t.encoding, StickLayoutAttr)
        pad, needed = t.encoding.padding.data, padding_elements(layout)
        if pad != needed:
            problems.append(f"pad = {pad}, but the device sizes pad the stick dim by {needed}")
    if problems:
        raise VerifyException(
            f"stick layout does not fit {t.element_type} tensor of shape"
            f" {list(layout.host_shape)}: " + "; ".join(problems)
        )
