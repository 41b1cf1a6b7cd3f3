from torch._inductor.pattern_matcher import PatternMatcherPass


class SelfNamed:
    def __init__(self):
        self.patterns = PatternMatcherPass(pass_name=self.__class__.__name__)


noop_patterns = PatternMatcherPass(pass_name="remove_noop_ops")  # named like torch's own pass
