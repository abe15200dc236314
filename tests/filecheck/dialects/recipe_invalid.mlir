// One chunk per verifier rule of the recipe dialect (spyre_ir/dialects/recipe.py). The
// `expected-error` annotations are checked strictly by spyre-opt; the CHECK lines pin the
// full printed diagnostic, location included.

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// The hash is a SHA-256 in hex.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: hash must be 64 lowercase hex digits (SHA-256)
// expected-error @+1 {{hash must be 64 lowercase hex digits (SHA-256)}}
recipe.plan @r for @main hash "abc" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// A slot's role is input or output.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  // CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:3: error: 'recipe.slot' @in0: role must be one of input, output, not 'inout'
  // expected-error @+1 {{role must be one of input, output, not 'inout'}}
  recipe.slot @in0 "inout" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// A slot's size is its stick image: 4 rows x one 64-element stick x 2 bytes.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  // CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:3: error: 'recipe.slot' @in0: size 500 bytes, but its stick layout needs 512
  // expected-error @+1 {{size 500 bytes, but its stick layout needs 512}}
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 500
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// The layout on the slot's type must fit the tensor.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  // CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:3: error: 'recipe.slot' @in0: stick layout does not fit f16 tensor of shape [4, 64]
  // expected-error @+1 {{stick layout does not fit f16 tensor of shape [4, 64]}}
  recipe.slot @in0 "input" 0 : tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 32], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// Slot names are unique.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: slot @in0 is declared twice
// expected-error @+1 {{slot @in0 is declared twice}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @in0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// Inputs (and outputs) are numbered from 0 without gaps.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: input slots must be numbered 0..n-1, have [1]
// expected-error @+1 {{input slots must be numbered 0..n-1, have [1]}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 1 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// Exactly one compute.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: needs exactly one recipe.compute, has 0
// expected-error @+1 {{needs exactly one recipe.compute, has 0}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// The address patch comes first: every later step reads the table.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: the first step must be recipe.patch_addresses
// expected-error @+1 {{the first step must be recipe.patch_addresses}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.patch_addresses [@in0, @out0]
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// The patch names every slot.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: recipe.patch_addresses must name every slot once
// expected-error @+1 {{recipe.patch_addresses must name every slot once}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// A step names a declared slot.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: recipe.restickify names unknown slot @in9
// expected-error @+1 {{recipe.restickify names unknown slot @in9}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in9
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// h2d carries inputs, d2h outputs.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: d2h transfer of @in0, an input slot
// expected-error @+1 {{d2h transfer of @in0, an input slot}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "d2h" @in0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// Inputs move before the compute.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: @in0 (input) must be moved before the compute
// expected-error @+1 {{@in0 (input) must be moved before the compute}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.compute @main
  recipe.restickify @in0
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// Every slot has both ways: a transfer and a restickify.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: slot @out0 needs exactly one restickify step, has 0
// expected-error @+1 {{slot @out0 needs exactly one restickify step, has 0}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
}

// -----

// A transfer goes h2d or d2h.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  // CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:3: error: 'recipe.transfer': direction must be h2d or d2h, not 'd2d'
  // expected-error @+1 {{direction must be h2d or d2h, not 'd2d'}}
  recipe.transfer "d2d" @in0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// Only an h2d transfer writes padding.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  // CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:3: error: 'recipe.transfer': only an h2d transfer writes padding
  // expected-error @+1 {{only an h2d transfer writes padding}}
  recipe.transfer "d2h" @out0 pad 1.0
  recipe.restickify @out0
}

// -----

// The compute runs the plan's entry.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: recipe.compute calls @other, the plan is for @main
// expected-error @+1 {{recipe.compute calls @other, the plan is for @main}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @other
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// The entry must exist.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: entry @nowhere is no func.func of this module
// expected-error @+1 {{entry @nowhere is no func.func of this module}}
recipe.plan @r for @nowhere hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @nowhere
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// Slot types are the entry's signature.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: slot @out0 is tensor<4x128xf16>, but output 0 of @main is tensor<4x64xf16>
// expected-error @+1 {{slot @out0 is tensor<4x128xf16>, but output 0 of @main is tensor<4x64xf16>}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x128xf16> size 1024
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// As many slots as the entry has arguments.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: 0 output slots, but @main has 1 outputs
// expected-error @+1 {{0 output slots, but @main has 1 outputs}}
recipe.plan @r for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
}

// -----

// Only an input slot is written in place.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
recipe.plan @r for @main hash "0000000000000000000000000000000000000000000000000000000000000000" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  // CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:3: error: 'recipe.slot' @out0: only an input slot is written in place
  // expected-error @+1 {{only an input slot is written in place}}
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512 written
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// A written input is one a program of the entry writes in place (a tied result).
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: slot @in0 is written, but no program of @main writes input 0 in place
// expected-error @+1 {{slot @in0 is written, but no program of @main writes input 0 in place}}
recipe.plan @r for @main hash "0000000000000000000000000000000000000000000000000000000000000000" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512 written
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// Only an output slot is tied to an input.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
recipe.plan @r for @main hash "0000000000000000000000000000000000000000000000000000000000000000" {
  // CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:3: error: 'recipe.slot' @in0: only an output slot is tied to an input
  // expected-error @+1 {{only an output slot is tied to an input}}
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512 tied 0
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}

// -----

// A tied output is the block of a written input slot.
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: recipe_invalid.mlir:[[# @LINE + 2]]:1: error: 'recipe.plan' @r: slot @out0 is tied to input 0, which is no written input slot
// expected-error @+1 {{slot @out0 is tied to input 0, which is no written input slot}}
recipe.plan @r for @main hash "0000000000000000000000000000000000000000000000000000000000000000" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512 tied 0
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}
