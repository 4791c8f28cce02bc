package colocate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/schooner-ml/schooner/colocation"
)

// stepper is the supervisor as the runner drives it (a fake in tests).
type stepper interface {
	Control() Decision
	Step(now time.Time, snap Snapshot) Decision
}

// Runner runs a colocated pair on this machine's GPU: it builds the launch shim, creates the
// shared board, starts the HP and BE programs with the shim preloaded (under an MPS daemon of
// their own where MPS is installed), and supervises: every window it adapts the admission
// rule to the HP side's slowdown, throttles the BE side and, if that fails, evicts it. The
// pair ends when the HP program ends.
type Runner struct {
	// WorkDir holds the shim (built once), each pair's statistics and MPS directories.
	WorkDir string
	// Stdout and Stderr receive the programs' output (default: this process's).
	Stdout, Stderr *os.File
	// StopGrace is how long a side has to end after SIGTERM before SIGKILL (default 10 s).
	StopGrace time.Duration
	// ProfileDir keeps kernel profiles between runs for pairs that name no folder of their own.
	ProfileDir string
	// PythonPath is trainer/python: where set, a Python BE program starts with its large
	// matrix products cut to the budget (schooner_colocate/boot/sitecustomize.py) unless the
	// pair asks for WholeGEMMs.
	PythonPath string

	newSupervisor func(colocation.Params, int) (stepper, error)
}

// Run runs the pair to the HP program's end (or ctx's), calling progress (when not nil) every
// window.
func (r *Runner) Run(ctx context.Context, pair colocation.Pair, progress func(colocation.Status)) (colocation.Result, error) {
	pair = pair.WithDefaults()
	if err := pair.Validate(); err != nil {
		return colocation.Result{}, err
	}
	if pair.ProfileDir == "" {
		pair.ProfileDir = r.ProfileDir
	}
	base := r.WorkDir
	if base == "" {
		base = filepath.Join(os.TempDir(), "schooner-colocate")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return colocation.Result{}, fmt.Errorf("colocation work dir: %w", err)
	}
	shim, err := BuildShim(ctx, base)
	if err != nil {
		return colocation.Result{}, err
	}
	work, err := os.MkdirTemp(base, "pair-")
	if err != nil {
		return colocation.Result{}, err
	}
	defer os.RemoveAll(work) // the shims' statistics are read into the result before it goes
	boardDir := work
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		boardDir = "/dev/shm"
	}
	board, err := CreateSharedBoard(filepath.Join(boardDir, "schooner-colocate-"+filepath.Base(work)),
		pair.SMs, Decision{Budget: pair.Params.Budget})
	if err != nil {
		return colocation.Result{}, err
	}
	defer board.Close()
	board.SetIdleBudget(pair.Params.IdleBudget)

	s := &supervision{r: r, pair: pair, board: board, start: time.Now(), progress: progress}
	if pair.SMs > 0 {
		if err := s.startSupervisor(pair.SMs); err != nil {
			return colocation.Result{}, err
		}
	}
	var mpsEnv []string
	if pair.MPS != colocation.MPSOff {
		d, why, err := startMPS(ctx, work)
		switch {
		case err != nil:
			return colocation.Result{}, err
		case d == nil && pair.MPS == colocation.MPSOn:
			return colocation.Result{}, fmt.Errorf("mps on: %s", why)
		case d == nil:
			s.res.Note = why
		default:
			defer d.stop()
			mpsEnv, s.res.MPS = d.env, true
		}
	}
	sideEnv := func(role string, p colocation.Program) []string {
		env := append([]string{
			preload(shim, p.Env),
			"SCHOONER_COLOCATE_ROLE=" + role,
			"SCHOONER_COLOCATE_BOARD=" + board.Path(),
			"SCHOONER_COLOCATE_STATS=" + filepath.Join(work, role+"-shim.json"),
		}, mpsEnv...)
		if role == "be" && s.res.MPS { // the BE side's MPS client settings: see colocation.Pair
			if !pair.BENormalPriority {
				env = append(env, "CUDA_MPS_CLIENT_PRIORITY=1") // below normal
			}
			if pair.BEThreadPercentage > 0 {
				env = append(env, fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pair.BEThreadPercentage))
			}
		}
		if role == "be" && r.PythonPath != "" && !pair.WholeGEMMs {
			env = append(env, pythonPathWith(p.Env, filepath.Join(r.PythonPath, "schooner_colocate", "boot"), r.PythonPath))
		}
		if pair.ProfileDir != "" {
			p := filepath.Join(pair.ProfileDir, role+".tsv")
			env = append(env, "SCHOONER_COLOCATE_PROFILES="+p, "SCHOONER_COLOCATE_PROFILE_OUT="+p)
		}
		return env
	}
	if pair.ProfileDir != "" {
		if err := os.MkdirAll(pair.ProfileDir, 0o755); err != nil {
			return colocation.Result{}, fmt.Errorf("profile dir: %w", err)
		}
	}
	stdout, stderr := r.Stdout, r.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	hp, err := startSide(pair.HP, sideEnv("hp", pair.HP), stderr, stdout)
	if err != nil {
		return colocation.Result{}, fmt.Errorf("starting the HP program %q: %w", pair.HP.Command[0], err)
	}
	res, err := s.loop(ctx, hp, func() (*sideProcess, error) { return startSide(pair.BE, sideEnv("be", pair.BE), stderr, stdout) })
	res.HPShim = readShimStats(filepath.Join(work, "hp-shim.json"))
	res.BEShim = readShimStats(filepath.Join(work, "be-shim.json"))
	return res, err
}

// supervision is one pair's run in progress.
type supervision struct {
	r        *Runner
	pair     colocation.Pair
	board    *SharedBoard
	sup      stepper
	start    time.Time
	res      colocation.Result
	progress func(colocation.Status)
}

func (s *supervision) startSupervisor(sms int) error {
	newSup := s.r.newSupervisor
	if newSup == nil {
		newSup = func(p colocation.Params, n int) (stepper, error) { return NewSupervisor(p, n) }
	}
	sup, err := newSup(s.pair.Params, sms)
	if err != nil {
		return err
	}
	s.sup = sup
	c := sup.Control()
	s.board.SetControl(c.Budget, c.SMLimit, c.State)
	return nil
}

func (s *supervision) event(format string, args ...any) {
	s.res.Events = append(s.res.Events, fmt.Sprintf("%s: ", time.Since(s.start).Round(time.Millisecond))+fmt.Sprintf(format, args...))
}

func (s *supervision) loop(ctx context.Context, hp *sideProcess, startBE func() (*sideProcess, error)) (colocation.Result, error) {
	grace := s.r.StopGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	var be *sideProcess
	beDone := make(chan struct{}) // replaced by the BE process's once it runs
	beStart := time.After(s.pair.BEDelay)
	tick := time.NewTicker(s.pair.Params.Window)
	defer tick.Stop()
	s.res.BEExit = -1
	finish := func() colocation.Result {
		if be != nil {
			be.stop(grace)
		}
		s.status(s.board.Snapshot())
		return s.res
	}
	for {
		select {
		case <-ctx.Done():
			hp.stop(grace)
			s.event("cancelled: %v", ctx.Err())
			return finish(), ctx.Err()
		case <-beStart:
			beStart = nil
			p, err := startBE()
			if err != nil {
				hp.stop(grace)
				return finish(), fmt.Errorf("starting the BE program %q: %w", s.pair.BE.Command[0], err)
			}
			be, beDone = p, p.done
			s.event("BE started")
		case <-beDone:
			beDone = nil
			s.res.BEExit = be.code
			s.board.ResetBE()
			s.event("BE exited with code %d", be.code)
		case <-hp.done:
			s.res.HPExit = hp.code
			s.board.ResetHP()
			s.event("HP exited with code %d", hp.code)
			if be != nil && beDone != nil {
				s.event("BE stopped: the HP side ended")
			}
			return finish(), nil
		case now := <-tick.C:
			snap := s.board.Snapshot()
			if s.sup == nil && snap.SMCount > 0 {
				if err := s.startSupervisor(snap.SMCount); err != nil {
					hp.stop(grace)
					return finish(), err
				}
			}
			if s.sup != nil {
				d := s.sup.Step(now, snap)
				s.res.Slowdown = d.Slowdown
				s.board.SetControl(d.Budget, d.SMLimit, d.State)
				if d.Reason != "" {
					s.event("%s", d.Reason)
				}
				if d.State == colocation.Evicted && !s.res.Evicted {
					s.res.Evicted = true
					if be != nil && beDone != nil {
						be.stop(grace)
					}
				}
			}
			s.status(snap)
			if s.progress != nil {
				s.progress(s.res.Status)
			}
		}
	}
}

// status fills the result's status from the board (the last window's slowdown is set by the
// loop, from the supervisor's decision).
func (s *supervision) status(snap Snapshot) {
	st := &s.res.Status
	st.Elapsed = time.Since(s.start)
	st.SMs = snap.SMCount
	st.HPKernels, st.BEKernels = snap.HPKernels, snap.BEKernels
	if snap.HPFastest > 0 {
		st.MeanSlowdown = float64(snap.HPMeasured) / float64(snap.HPFastest)
	}
	st.Budget, st.SMLimit, st.BEState = snap.Budget, snap.SMLimit, snap.BEState.String()
	st.BEWaits, st.BEWaited, st.BEBeside, st.BEWaitsBy = snap.BEWaits, snap.BEWaited, snap.BEAdmittedBeside, snap.BEWaitsBy
}

func readShimStats(path string) map[string]any {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return map[string]any{"unreadable": strconv.Quote(string(b))}
	}
	return m
}
