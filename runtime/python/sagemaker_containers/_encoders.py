"""Array (de)serialization for the framework containers' content types."""
import io
import json

from sagemaker_containers import _content_types, _errors


def _np():
    import numpy

    return numpy


def array_to_npy(array_like):
    buf = io.BytesIO()
    _np().save(buf, array_like)
    return buf.getvalue()


def npy_to_numpy(npy_array):
    return _np().load(io.BytesIO(npy_array), allow_pickle=True)


def array_to_json(array_like):
    def default(o):
        return o.tolist() if hasattr(o, "tolist") else o

    return json.dumps(array_like, default=default)


def json_to_numpy(string_like, dtype=None):
    return _np().array(json.loads(string_like), dtype=dtype)


def csv_to_numpy(string_like, dtype=None):
    if isinstance(string_like, bytes):
        string_like = string_like.decode("utf-8")
    return _np().genfromtxt(io.StringIO(string_like), dtype=dtype,
                            delimiter=",")


def array_to_csv(array_like):
    buf = io.StringIO()
    _np().savetxt(buf, array_like, delimiter=",", fmt="%s")
    return buf.getvalue()


_DECODERS = {_content_types.NPY: npy_to_numpy, _content_types.CSV: csv_to_numpy,
             _content_types.JSON: json_to_numpy}
_ENCODERS = {_content_types.NPY: array_to_npy, _content_types.CSV: array_to_csv,
             _content_types.JSON: array_to_json}


def decode(obj, content_type):
    """obj (of content_type) as a numpy array."""
    try:
        return _DECODERS[content_type](obj)
    except KeyError:
        raise _errors.UnsupportedFormatError(content_type)


def encode(array_like, content_type):
    """array_like in content_type."""
    try:
        return _ENCODERS[content_type](array_like)
    except KeyError:
        raise _errors.UnsupportedFormatError(content_type)
