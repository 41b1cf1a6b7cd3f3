PASSES = {}


def graph_pass(name):
    def register(fn):
        PASSES[name] = fn
        return fn
    return register
