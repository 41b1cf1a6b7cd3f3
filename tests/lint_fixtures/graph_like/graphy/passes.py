class CountNodes:
    def __call__(self, graph):
        return len(graph.nodes)


class PrintCode:
    def __call__(self, graph):
        print(graph.python_code(root_module="self").src)
        return graph
