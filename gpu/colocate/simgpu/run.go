package simgpu

import (
	"fmt"
	"slices"
	"time"

	"github.com/schooner-ml/schooner/gpu/colocate"
)

// Result is one simulated run of a mechanism.
type Result struct {
	Mechanism Mechanism
	HPP50     time.Duration // HP request latency; zero when the run had no HP side
	HPP99     time.Duration
	Requests  int
	// BEWork is the BE side's progress: the alone-time of its kernels completed per second of
	// simulated time (1.0 = the GPU did nothing else).
	BEWork float64
	// Final is the supervisor's last decision (Schooner only); Changes its state changes.
	Final   colocate.Decision
	Changes []string
}

// Run simulates one mechanism. Dedicated runs the HP side alone and the BE side alone, each
// for the scenario's duration, and reports both.
func Run(sc Scenario, m Mechanism) (Result, error) {
	if err := sc.Validate(); err != nil {
		return Result{}, fmt.Errorf("simulated colocation scenario: %w", err)
	}
	switch m {
	case Dedicated:
		hp, err := run(sc, true, false, Priority)
		if err != nil {
			return Result{}, err
		}
		be, err := run(sc, false, true, Priority)
		hp.BEWork, hp.Mechanism = be.BEWork, Dedicated
		return hp, err
	case Streams, Priority, Schooner:
		return run(sc, true, true, m)
	}
	return Result{}, fmt.Errorf("simulated mechanism %q is not one of %v", m, Mechanisms)
}

func run(sc Scenario, withHP, withBE bool, m Mechanism) (Result, error) {
	g := newGPU(sc.SMs, sc.Seed)
	res := Result{Mechanism: m}
	hpPriority := 0
	if m != Streams {
		hpPriority = -3 // the H200's highest
	}
	var board *colocate.Board
	var sup *colocate.Supervisor
	if m == Schooner {
		var err error
		if sup, err = colocate.NewSupervisor(sc.Params, sc.SMs); err != nil {
			return res, err
		}
		c := sup.Control()
		board = colocate.NewBoard(sc.SMs, c.Budget, c.SMLimit)
		board.SetIdleBudget(sc.Params.IdleBudget)
		defer board.Close()
		epoch := time.Unix(0, 0)
		var tick func()
		tick = func() {
			d := sup.Step(epoch.Add(g.now), board.Snapshot())
			board.SetControl(d.Budget, d.SMLimit, d.State)
			if d.Reason != "" {
				res.Changes = append(res.Changes, fmt.Sprintf("%s: %s", g.now.Round(time.Millisecond), d.Reason))
			}
			res.Final = d
			g.at(g.now+sc.Params.Window, tick)
		}
		g.at(sc.Params.Window, tick)
	}
	var hp *hpClient
	if withHP {
		hp = &hpClient{g: g, s: g.newStream(hpPriority), sc: sc, board: board, fastest: map[string]time.Duration{}}
		hp.start()
	}
	var be *beClient
	if withBE {
		be = &beClient{g: g, s: g.newStream(0), sc: sc, board: board}
		be.start()
	}
	g.runUntil(sc.Duration)
	if hp != nil {
		res.Requests = len(hp.latencies)
		res.HPP50, res.HPP99 = quantile(hp.latencies, 0.50), quantile(hp.latencies, 0.99)
	}
	if be != nil {
		res.BEWork = float64(be.work) / float64(sc.Duration)
	}
	return res, nil
}

// quantile is the q-quantile (nearest rank) of the latencies.
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Row is one mechanism against dedicated: HP latency ratios and BE progress as a fraction.
type Row struct {
	Result
	P50Ratio, P99Ratio float64
	BEShare            float64 // BE progress against the BE side alone
}

// Compare runs every mechanism on the scenario, dedicated first, and puts each against it.
func Compare(sc Scenario) ([]Row, error) {
	base, err := Run(sc, Dedicated)
	if err != nil {
		return nil, err
	}
	rows := []Row{{Result: base, P50Ratio: 1, P99Ratio: 1, BEShare: 1}}
	for _, m := range Mechanisms[1:] {
		r, err := Run(sc, m)
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{
			Result:   r,
			P50Ratio: float64(r.HPP50) / float64(base.HPP50),
			P99Ratio: float64(r.HPP99) / float64(base.HPP99),
			BEShare:  r.BEWork / base.BEWork,
		})
	}
	return rows, nil
}
