def make_joint_pass(budget):
    def joint_pass(gm, joint_inputs):
        return gm

    return joint_pass


def functorch_patches():
    patches = {}
    patches["joint_custom_pass"] = make_joint_pass(1.0)
    return patches
