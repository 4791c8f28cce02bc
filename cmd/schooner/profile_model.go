package main

import "github.com/spf13/cobra"

// profileModelFlags are the flags of 'schooner profile model'. The dimensions are kept as
// given so that resolve can tell "not given" (zero) from a built-in model's value.
type profileModelFlags struct {
	model                             string
	name                              string
	layers, hidden, heads, ffn, vocab int
	seqLen                            int
	mbs, tp                           []int
	gpuType                           string
	warmup, reps                      int
	out                               string
	python, pythonPath                string
}

func newProfileModelCommand() *cobra.Command {
	f := &profileModelFlags{}
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Measure a GPT decoder's per-layer time and memory on this GPU and write a model profile",
		Long: `model runs the PyTorch profiler (python3 -m schooner_train.profile, in trainer/python) on
this node's GPU and writes a model profile in the planner's format (schooner.model-profile/v1,
docs/profiles.md). For a GPT decoder of the given dimensions it measures, per layer
(embedding, every transformer block, head), at every TP degree and micro-batch size asked
for:

  - forward and backward time of one microbatch, and the optimizer step;
  - parameters and the activations kept for the backward pass, per sample;
  - the memory model of this machine: bytes per parameter while training and the memory the
    framework holds besides the model (memory_model in the file), so that predicted peak
    memory matches what this PyTorch, driver and GPU really use.

It needs a GPU node with Python 3 and PyTorch (CUDA), and the schooner_train package: by
default ./trainer/python when run from the repository, else $SCHOONER_PYTHONPATH, else
--python-path. The profiler's output is shown as it runs; the file it writes is then loaded
the way 'schooner plan simulate --profiles DIR' loads it (DIR = the file's folder), and a
summary is printed. Give a built-in model (` + builtinList() + `) or
every dimension.

  schooner profile model --model OPT-350 --mbs 1,2,4 --out profiles/OPT-350.json
  schooner profile model --name gpt-350m --layers 24 --hidden 1024 --heads 16 --ffn 4096 \
      --vocab 50272 --seq-len 1024 --mbs 1,2 --tp 1,2 --gpu-type H200-141
  schooner plan simulate --plan plan.json --profiles profiles`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run, err := f.resolve(cmd)
			if err != nil {
				return err
			}
			if err := run.execute(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
				return err
			}
			res, err := run.check()
			if err != nil {
				return err
			}
			printProfileSummary(cmd.OutOrStdout(), run, res)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.model, "model", "", "built-in model to profile ("+builtinList()+"); instead of the dimensions")
	fs.StringVar(&f.name, "name", "", "model name written into the profile (with the dimensions)")
	fs.IntVar(&f.layers, "layers", 0, "transformer blocks (embedding and head not counted)")
	fs.IntVar(&f.hidden, "hidden", 0, "hidden size")
	fs.IntVar(&f.heads, "heads", 0, "attention heads")
	fs.IntVar(&f.ffn, "ffn", 0, "MLP inner width")
	fs.IntVar(&f.vocab, "vocab", 0, "vocabulary size")
	fs.IntVar(&f.seqLen, "seq-len", 0, "sequence length every per-sample number is measured at")
	fs.IntSliceVar(&f.mbs, "mbs", []int{1, 2, 4}, "micro-batch sizes to measure (comma list)")
	fs.IntSliceVar(&f.tp, "tp", []int{1}, "tensor-parallel degrees to measure (comma list; needs that many GPUs)")
	fs.StringVar(&f.gpuType, "gpu-type", "H200-141", "schooner GPU type of this node's GPUs: "+knownGPUList())
	fs.IntVar(&f.warmup, "warmup", 1, "untimed rounds before measuring")
	fs.IntVar(&f.reps, "reps", 10, "passes per timed round, run back to back (5 rounds, median)")
	fs.StringVar(&f.out, "out", "", "profile file to write (default <name>.json)")
	fs.StringVar(&f.python, "python", "python3", "Python interpreter with PyTorch")
	fs.StringVar(&f.pythonPath, "python-path", "", "directory holding schooner_train, added to PYTHONPATH (default ./trainer/python if it exists, else $"+pythonPathEnv+")")
	return cmd
}
