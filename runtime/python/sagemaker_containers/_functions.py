"""Helpers for calling user functions with the arguments they accept."""
import inspect


def matching_args(fn, dictionary):
    """The items of dictionary that fn takes as arguments."""
    spec = inspect.getfullargspec(fn)
    if spec.varkw:
        return dict(dictionary)
    return {k: v for k, v in dictionary.items() if k in spec.args}


def getargspec(fn):
    """fn's argument specification."""
    return inspect.getfullargspec(fn)
