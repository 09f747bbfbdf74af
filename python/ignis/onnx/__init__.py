"""ignis.onnx: ONNX export is not supported by ignis. The module imports so
that scripts which only mention it run."""

__all__ = ["export", "is_in_onnx_export"]


def export(*args, **kwargs):
    raise NotImplementedError("ignis.onnx.export: exporting a model to ONNX is not supported by "
                              "ignis")


def dynamo_export(*args, **kwargs):
    raise NotImplementedError("ignis.onnx.dynamo_export: exporting a model to ONNX is not "
                              "supported by ignis")


def is_in_onnx_export():
    return False
