# Inductor hook keys, named once for the project.
JOINT_KEY = "joint_custom_post_pass"
