"""Stores of the same attribute names on objects that are no FX node: no pass."""


class Options:
    def __init__(self, args, target):
        self.args = args
        self.target = target


def retarget(options, target):
    options.target = target
    return options


HANDLERS = [retarget]
