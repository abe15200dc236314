"func.func"() <{sym_name = "main", function_type = tensor<2xf16>}> ({
^bb0(%a: tensor<2xf16>):
  "func.return"(%a) : (tensor<2xf16>) -> ()
}) : () -> ()
