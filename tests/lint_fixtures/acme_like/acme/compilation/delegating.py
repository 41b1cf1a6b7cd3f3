from vendor_sdk.passes import VendorPass


class FoldViews(VendorPass):
    """Its __call__ only hands the graph on; the method it hands it to works on the graph."""

    def __call__(self, g):
        return self.run(g)

    def run(self, g):
        for node in list(g.nodes):
            if node.op == "call_method" and node.target == "view" and not node.users:
                g.erase_node(node)
