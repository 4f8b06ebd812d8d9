"""Megatron-LM's own argument parser and validate_args over the arguments an
exported megatron_torchrun.sh passes to pretrain_gpt.py (test
export_megatron_accepted, through tests/export/torchrun). Run from a
Megatron-LM checkout with WORLD_SIZE set; prints the degrees Megatron took."""
import sys
import typing

if not hasattr(typing, "override"):  # Megatron-LM imports it; Python < 3.12 lacks it
    typing.override = lambda f: f

import megatron.training.arguments as arguments  # noqa: E402

# no GPU here: validate_args asks the device's architecture; answer Hopper's
arguments.get_device_arch_version = lambda: 9
sys.argv = ["pretrain_gpt.py"] + sys.argv[1:]
args = arguments.parse_args()
arguments.validate_args(args, {})
print(f"megatron accepted: world {args.world_size} tp {args.tensor_model_parallel_size} "
      f"pp {args.pipeline_model_parallel_size} dp {args.data_parallel_size} "
      f"vp {args.virtual_pipeline_model_parallel_size} gbs {args.global_batch_size} "
      f"mbs {args.micro_batch_size}", flush=True)
