import dyn.hookkeys.names
from dyn import hookkeys


def fold_casts(gm):
    return gm


def dedupe_views(gm):
    return gm


def configure(options):
    options[dyn.hookkeys.names.JOINT_KEY] = fold_casts
    options[hookkeys.names.JOINT_KEY] = dedupe_views
    return options
