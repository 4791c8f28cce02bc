// Command accuracy compares the planner's simulator with a real trainer on a GPU machine:
// for every configuration the reference trainer (schooner_train.train) measured, it builds
// the same plan, simulates it with the profiles schooner_train.profile wrote, and prints the
// error of the predicted iteration time and peak memory, then the median absolute errors
// against the goal (5%).
//
//	go run ./bench/gpu/accuracy -profiles DIR -measured FILE [-markdown]
//
// DIR is a profiles directory (docs/profiles.md), one model profile per model name. FILE is
// JSON lines, one measured configuration per line (see measurement). A line that cannot be
// compared is an error naming it: a benchmark that drops the configurations it cannot
// explain reports an accuracy it does not have.
package main

import (
	"errors"
	"io"

	"github.com/schooner-ml/schooner/bench/internal/cli"
)

// goalPercent is the median absolute error the simulator should stay within.
const goalPercent = 5.0

func main() { cli.Main("accuracy", run) }

// run is main without the process: flags in, table out.
func run(args []string, out io.Writer) error {
	fs := cli.FlagSet("accuracy", out)
	profilesDir := fs.String("profiles", "", "profiles directory written by schooner_train.profile (one file per model)")
	measured := fs.String("measured", "", "JSON lines of measured configurations written by schooner_train.train --measure-out")
	markdown := fs.Bool("markdown", false, "print a Markdown table")
	casesOut := fs.String("cases-out", "", "also write each measured configuration as a bench/planaccuracy case into this directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *profilesDir == "" || *measured == "" {
		return errors.New("-profiles and -measured are required")
	}
	ms, err := readMeasurements(*measured)
	if err != nil {
		return err
	}
	if *casesOut != "" {
		if err := writeCases(ms, *casesOut); err != nil {
			return err
		}
	}
	rows, err := compareAll(ms, *profilesDir)
	if err != nil {
		return err
	}
	if *markdown {
		printMarkdown(out, rows)
	} else {
		printText(out, rows)
	}
	return nil
}
