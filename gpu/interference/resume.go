package interference

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/schooner-ml/schooner/interference"
)

// ErrNotContinuable is the error of a study that cannot continue an earlier one: another GPU,
// driver or workload scale, or a request whose runs would not measure the same thing. Its
// message names every difference.
var ErrNotContinuable = errors.New("the earlier study cannot be continued")

// continuable says why the study s is about to run (its GPU, request and whether simulated
// set) cannot keep the earlier study's runs: figures measured on another card (even of the
// same model and driver: another host), GPU model or driver, at another workload scale, or
// with other requests, think time, warm-up, repeats, seed or counters, are not the figures
// this study would measure. An earlier study that did not record its card (format version 3
// and before) is continued only by an executor that names none either: which card it ran on
// cannot be checked.
func continuable(earlier, s interference.Study) error {
	var diffs []string
	differ := func(field string, then, now any) {
		if then != now {
			diffs = append(diffs, fmt.Sprintf("%s %v then, %v now", field, quoteEmpty(then), quoteEmpty(now)))
		}
	}
	differ("gpu.model", earlier.GPU.Model, s.GPU.Model)
	differ("gpu.driver", earlier.GPU.Driver, s.GPU.Driver)
	if earlier.GPU.UUID != s.GPU.UUID {
		then := earlier.GPU.UUID
		if then == "" {
			then = "not recorded"
		}
		diffs = append(diffs, fmt.Sprintf("gpu.uuid %s then, %s now (a study continues only on the card it began on: "+
			"a latency-critical workload alone on another host is no baseline for its runs here)", then, quoteEmpty(s.GPU.UUID)))
	}
	differ("gpu.scale", earlier.GPU.Scale, s.GPU.Scale)
	differ("simulated", earlier.Simulated, s.Simulated)
	then, now := earlier.Request.WithDefaults(), s.Request
	differ("requests", then.Requests, now.Requests)
	differ("think_ms", then.ThinkMs, now.ThinkMs)
	differ("warmup", then.Warmup, now.Warmup)
	differ("repeats", then.Repeats, now.Repeats)
	differ("seed", then.Seed, now.Seed)
	differ("counters", then.Counters, now.Counters)
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s", ErrNotContinuable, strings.Join(diffs, "; "))
	}
	return nil
}

func quoteEmpty(v any) any {
	if v == "" {
		return `""`
	}
	return v
}

// leftOut refuses an earlier study with steps that p does not run: continuing it would drop
// them, and a resumed study keeps everything it was given.
func leftOut(earlier interference.Study, p plan) error {
	var out []string
	for _, r := range earlier.Runs {
		if !p.has(r.Step()) {
			out = append(out, r.Step().String())
		}
	}
	for _, c := range earlier.Counters {
		if !p.has(c.Step()) {
			out = append(out, c.Step().String())
		}
	}
	if len(out) == 0 {
		return nil
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return fmt.Errorf("%w: it measured steps this request leaves out (%s); ask for its pairs and mechanisms again",
		ErrNotContinuable, strings.Join(out, ", "))
}

// availability probes the request's mechanisms and returns those the machine runs, and the
// others with the machine's reason. A mechanism of the earlier study's request is not probed
// again: the earlier answer stands, so that a resumed study's mechanisms are those of the
// study it continues.
func availability(ctx context.Context, x Executor, mechs []interference.Mechanism, earlier *interference.Study) ([]interference.Mechanism, []interference.Unavailable, error) {
	known := map[interference.Mechanism]*string{}
	if earlier != nil {
		for _, m := range earlier.Request.Mechanisms {
			known[m] = nil
		}
		for _, u := range earlier.Unavailable {
			known[u.Mechanism] = &u.Reason
		}
	}
	var available []interference.Mechanism
	var refused []interference.Unavailable
	for _, m := range mechs {
		reason, ok := known[m]
		if !ok {
			if err := x.Available(ctx, m); err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				refused = append(refused, interference.Unavailable{Mechanism: m, Reason: err.Error()})
				continue
			}
		} else if reason != nil {
			refused = append(refused, interference.Unavailable{Mechanism: m, Reason: *reason})
			continue
		}
		available = append(available, m)
	}
	return available, refused, nil
}
