class DeadViewCleanup:
    def __call__(self, gm):
        for node in list(gm.graph.nodes):
            if node.op == "call_method" and not node.users:
                gm.graph.erase_node(node)
        gm.recompile()
