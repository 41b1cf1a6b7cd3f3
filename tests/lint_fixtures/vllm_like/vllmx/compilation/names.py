"""Pass names kept as module constants."""

RMS_FUSION = "rms_norm_quant_fusion"
ATTN_FUSION = "attn_fusion"
