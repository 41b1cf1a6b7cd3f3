# Which Inductor hooks the project installs into, named once for the whole package.
POST_PASS_KEY = "post_grad_custom_post_pass"
PRE_PASS_KEY = "post_grad_custom_pre_pass"
JOINT_PASS_KEY = "joint_custom_pass"
