package colocate

/*
#include <stdlib.h>
#include "board.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/schooner-ml/schooner/colocation"
)

// Board is the scoreboard the runtime's processes share (board.h): the BE shim applies the
// admission rule against it before every kernel, the HP shim publishes its outstanding work
// and slowdown there, and the Supervisor writes the budget, the SM limit and the BE state.
// The rule is board.c itself, compiled here through cgo, so the simulated GPU's tests run the
// very code the shim runs on the GPU machine.
type Board struct {
	b     *C.sch_board
	owned bool // allocated by NewBoard (freed by Close), not mapped from a file
}

// BoardSize is the size of the shared-memory file that holds a board.
const BoardSize = int(C.sizeof_sch_board)

// Verdict is the admission rule's answer for one BE kernel.
type Verdict int

// The verdicts (board.h): admitted, or waiting and why.
const (
	WaitPaused  Verdict = C.SCH_WAIT_PAUSED
	WaitSMs     Verdict = C.SCH_WAIT_SMS
	WaitHP      Verdict = C.SCH_WAIT_HP
	WaitBudget  Verdict = C.SCH_WAIT_BUDGET
	AdmitIdle   Verdict = C.SCH_ADMIT_IDLE
	AdmitBeside Verdict = C.SCH_ADMIT_BESIDE
)

// Admitted says whether the kernel may launch now.
func (v Verdict) Admitted() bool { return v > 0 }

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case WaitPaused:
		return "wait-paused"
	case WaitSMs:
		return "wait-sms"
	case WaitHP:
		return "wait-hp"
	case WaitBudget:
		return "wait-budget"
	case AdmitIdle:
		return "admit-idle"
	case AdmitBeside:
		return "admit-beside"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// NewBoard allocates a board outside Go's heap (as the shared-memory one is) and initializes
// it for a device of smCount SMs.
func NewBoard(smCount int, budget time.Duration, smLimit int) *Board {
	p := (*C.sch_board)(C.calloc(1, C.size_t(BoardSize)))
	b := &Board{b: p, owned: true}
	b.Init(smCount, budget, smLimit)
	return b
}

// boardAt is the board in memory the caller mapped (at least BoardSize bytes).
func boardAt(mem unsafe.Pointer) *Board { return &Board{b: (*C.sch_board)(mem)} }

// Init (re)initializes the board.
func (b *Board) Init(smCount int, budget time.Duration, smLimit int) {
	C.sch_board_init(b.b, C.uint32_t(smCount), C.int64_t(budget.Nanoseconds()), C.int64_t(smLimit))
}

// Valid says whether the memory holds an initialized board of this version.
func (b *Board) Valid() bool { return C.sch_board_valid(b.b) != 0 }

// Close frees a board NewBoard allocated; a mapped one is unmapped by its owner.
func (b *Board) Close() {
	if b.owned && b.b != nil {
		C.free(unsafe.Pointer(b.b))
	}
	b.b = nil
}

// Charge is what a BE kernel with this profiled duration (0: not profiled) is charged
// against the budget.
func (b *Board) Charge(profiled time.Duration) time.Duration {
	return time.Duration(C.sch_charge_ns(b.b, C.int64_t(profiled.Nanoseconds())))
}

// Admit applies the admission rule to one BE kernel charged charge (from Charge).
func (b *Board) Admit(charge time.Duration, sms int, bound colocation.Bound) Verdict {
	return Verdict(C.sch_admit(b.b, C.int64_t(charge.Nanoseconds()), C.int64_t(sms), C.int(bound)))
}

// BELaunched and BECompleted keep the books of an admitted BE kernel.
func (b *Board) BELaunched(v Verdict, charge time.Duration, sms int) {
	C.sch_be_launched(b.b, C.int(v), C.int64_t(charge.Nanoseconds()), C.int64_t(sms))
}

// BECompleted: see BELaunched.
func (b *Board) BECompleted(v Verdict, charge time.Duration, sms int) {
	C.sch_be_completed(b.b, C.int(v), C.int64_t(charge.Nanoseconds()), C.int64_t(sms))
}

// BEWaited records that a BE launch waited this long before it was admitted; first is the
// verdict that first held it.
func (b *Board) BEWaited(d time.Duration, first Verdict) {
	C.sch_be_waited(b.b, C.int64_t(d.Nanoseconds()), C.int(first))
}

// HPLaunched and HPCompleted keep the books of an HP kernel: completed with the time from
// eligible to done and the fastest time seen for that kernel and shape.
func (b *Board) HPLaunched(bound colocation.Bound) { C.sch_hp_launched(b.b, C.int(bound)) }

// HPCompleted: see HPLaunched.
func (b *Board) HPCompleted(bound colocation.Bound, measured, fastest time.Duration) {
	C.sch_hp_completed(b.b, C.int(bound), C.int64_t(measured.Nanoseconds()), C.int64_t(fastest.Nanoseconds()))
}

// ResetHP and ResetBE take a side's outstanding work off the books after its process ended
// (a killed process cannot), so the other side is not held back by kernels that no longer run.
func (b *Board) ResetHP() { C.sch_reset_hp(b.b) }

// ResetBE: see ResetHP.
func (b *Board) ResetBE() { C.sch_reset_be(b.b) }

// SetControl writes the supervisor's decision.
func (b *Board) SetControl(budget time.Duration, smLimit int, state colocation.BEState) {
	C.sch_set_control(b.b, C.int64_t(budget.Nanoseconds()), C.int64_t(smLimit), C.int64_t(state))
}

// SetIdleBudget sets the cap on outstanding BE work while the HP side is idle; it applies only
// where it is larger than the budget (colocation.Params.IdleBudget). The supervisor never moves
// it.
func (b *Board) SetIdleBudget(d time.Duration) {
	C.sch_set_idle_budget(b.b, C.int64_t(d.Nanoseconds()))
}

// Snapshot is the board's counters at one moment.
type Snapshot struct {
	SMCount                                   int
	Budget                                    time.Duration
	SMLimit                                   int
	BEState                                   colocation.BEState
	HPOutstanding, HPKernels                  int64
	HPMeasured, HPFastest                     time.Duration
	BEOutstanding, BEKernels                  int64
	BEOutstandingWork                         time.Duration
	BEAdmittedIdle, BEAdmittedBeside, BEWaits int64
	BEWaited                                  time.Duration
	BEWaitsBy                                 colocation.WaitReasons
}

// Snapshot reads the counters.
func (b *Board) Snapshot() Snapshot {
	var s C.sch_snapshot
	C.sch_snapshot_read(b.b, &s)
	return Snapshot{
		SMCount:           int(s.sm_count),
		Budget:            time.Duration(s.budget_ns),
		SMLimit:           int(s.sm_limit),
		BEState:           colocation.BEState(s.be_state),
		HPOutstanding:     int64(s.hp_outstanding),
		HPKernels:         int64(s.hp_kernels),
		HPMeasured:        time.Duration(s.hp_measured_ns),
		HPFastest:         time.Duration(s.hp_fastest_ns),
		BEOutstanding:     int64(s.be_outstanding),
		BEKernels:         int64(s.be_kernels),
		BEOutstandingWork: time.Duration(s.be_outstanding_ns),
		BEAdmittedIdle:    int64(s.be_admitted_idle),
		BEAdmittedBeside:  int64(s.be_admitted_beside),
		BEWaits:           int64(s.be_waits),
		BEWaited:          time.Duration(s.be_wait_ns),
		BEWaitsBy: colocation.WaitReasons{Budget: int64(s.be_waits_by[-WaitBudget-1]), HP: int64(s.be_waits_by[-WaitHP-1]),
			SMs: int64(s.be_waits_by[-WaitSMs-1]), Paused: int64(s.be_waits_by[-WaitPaused-1])},
	}
}
