class GraphTransformObserver:
    def __init__(self, gm, passname, subsystem=None):
        self.gm, self.passname = gm, passname

    def apply_graph_pass(self, fn):
        return fn(self.gm.graph)
