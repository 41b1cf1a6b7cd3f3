# The stage prefix of the hook keys, named once.
POST_STAGE = "post_grad"
