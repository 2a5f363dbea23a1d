"""Converting a model between opset versions: what each op version step changes
(:mod:`.version_steps`, onnx.defs and the steps' known changes), the version adapters and their
registry (:mod:`.adapters`), moving one node across opsets (:mod:`.node_moves`), and axes known
only at run time as a choice among constant ones (:mod:`.axes_choice`)."""
