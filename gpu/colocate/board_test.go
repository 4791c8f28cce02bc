package colocate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/colocation"
)

const us = time.Microsecond

func TestAdmitWhenHPIsIdleKeepsQueuedBEWorkWithinTheBudget(t *testing.T) {
	b := NewBoard(132, 400*us, 66)
	defer b.Close()
	require.True(t, b.Valid())

	// The first kernel goes even when it is longer than the budget (or it would starve).
	require.Equal(t, AdmitIdle, b.Admit(b.Charge(1600*us), 132, colocation.Compute))
	b.BELaunched(AdmitIdle, 1600*us, 132)
	require.Equal(t, WaitBudget, b.Admit(b.Charge(100*us), 132, colocation.Compute))
	b.BECompleted(AdmitIdle, 1600*us, 132)

	for range 4 {
		require.Equal(t, AdmitIdle, b.Admit(100*us, 132, colocation.Compute))
		b.BELaunched(AdmitIdle, 100*us, 132)
	}
	require.Equal(t, WaitBudget, b.Admit(100*us, 132, colocation.Compute), "400 µs already queued")
	s := b.Snapshot()
	require.Equal(t, int64(4), s.BEOutstanding)
	require.Equal(t, 400*us, s.BEOutstandingWork)
	require.Equal(t, int64(5), s.BEAdmittedIdle)
	require.Equal(t, int64(1), s.BEKernels)
}

// The idle budget deepens the queue while HP is idle, and only then: once an HP kernel is out
// the budget governs again; an idle budget below the budget changes nothing.
func TestAdmitWhenHPIsIdleUsesTheIdleBudgetWhereLarger(t *testing.T) {
	b := NewBoard(132, 100*us, 66)
	defer b.Close()
	b.SetIdleBudget(50 * us)
	require.Equal(t, AdmitIdle, b.Admit(100*us, 132, colocation.Memory))
	b.BELaunched(AdmitIdle, 100*us, 132)
	require.Equal(t, WaitBudget, b.Admit(10*us, 132, colocation.Memory), "the budget, not the smaller idle budget")

	b.SetIdleBudget(1000 * us)
	for range 9 {
		require.Equal(t, AdmitIdle, b.Admit(100*us, 132, colocation.Memory))
		b.BELaunched(AdmitIdle, 100*us, 132)
	}
	require.Equal(t, WaitBudget, b.Admit(100*us, 132, colocation.Memory), "1000 µs queued")
	require.Equal(t, 1000*us, b.Snapshot().BEOutstandingWork)

	b.HPLaunched(colocation.Compute)
	require.Equal(t, WaitBudget, b.Admit(10*us, 10, colocation.Memory), "HP busy: the budget (100 µs) is long exceeded")
}

func TestAdmitBesideBusyHPOnlyComplementaryKernelsWithinTheSMLimit(t *testing.T) {
	b := NewBoard(132, 400*us, 66)
	defer b.Close()
	b.HPLaunched(colocation.Memory)

	require.Equal(t, WaitHP, b.Admit(100*us, 10, colocation.Memory), "same bound as the HP work")
	require.Equal(t, WaitHP, b.Admit(100*us, 10, colocation.Unknown), "not profiled")
	require.Equal(t, WaitSMs, b.Admit(100*us, 132, colocation.Compute), "a full-device grid")
	require.Equal(t, AdmitBeside, b.Admit(100*us, 60, colocation.Compute))
	b.BELaunched(AdmitBeside, 100*us, 60)
	require.Equal(t, WaitSMs, b.Admit(100*us, 10, colocation.Compute), "60+10 > 66")
	require.Equal(t, AdmitBeside, b.Admit(100*us, 6, colocation.Compute))
	b.BELaunched(AdmitBeside, 100*us, 6)
	b.BECompleted(AdmitBeside, 100*us, 60)
	require.Equal(t, WaitBudget, b.Admit(350*us, 6, colocation.Compute), "100+350 > 400")

	// Mixed HP work complements nothing.
	b.HPLaunched(colocation.Compute)
	require.Equal(t, WaitHP, b.Admit(10*us, 1, colocation.Compute))
	require.Equal(t, WaitHP, b.Admit(10*us, 1, colocation.Memory))
	b.HPCompleted(colocation.Compute, 60*us, 50*us)
	b.HPCompleted(colocation.Memory, 50*us, 50*us)
	require.Equal(t, AdmitIdle, b.Admit(10*us, 1, colocation.Memory), "HP idle again")

	s := b.Snapshot()
	require.Equal(t, int64(2), s.HPKernels)
	require.Equal(t, 110*us, s.HPMeasured)
	require.Equal(t, 100*us, s.HPFastest)
}

func TestAdmitRefusesEverythingWhileThrottledAndChargesUnprofiledKernelsTheBudget(t *testing.T) {
	b := NewBoard(132, 400*us, 66)
	defer b.Close()
	require.Equal(t, 400*us, b.Charge(0))
	require.Equal(t, 30*us, b.Charge(30*us))

	b.SetControl(200*us, 10, colocation.Throttled)
	require.Equal(t, WaitPaused, b.Admit(10*us, 1, colocation.Compute))
	b.SetControl(200*us, 10, colocation.Evicted)
	require.Equal(t, WaitPaused, b.Admit(10*us, 1, colocation.Compute))
	b.SetControl(200*us, 10, colocation.Running)
	require.Equal(t, AdmitIdle, b.Admit(b.Charge(0), 1, colocation.Compute))
	s := b.Snapshot()
	require.Equal(t, 200*us, s.Budget)
	require.Equal(t, 10, s.SMLimit)
	require.Equal(t, 132, s.SMCount)
}

func TestResetTakesADeadSidesWorkOffTheBooks(t *testing.T) {
	b := NewBoard(132, 400*us, 66)
	defer b.Close()
	b.HPLaunched(colocation.Compute)
	b.BELaunched(AdmitIdle, 400*us, 132)
	require.Equal(t, WaitHP, b.Admit(10*us, 1, colocation.Compute))
	b.ResetHP()
	require.Equal(t, WaitBudget, b.Admit(10*us, 1, colocation.Compute), "HP idle now, the dead BE kernel still counts")
	b.ResetBE()
	require.Equal(t, AdmitIdle, b.Admit(10*us, 1, colocation.Compute))
	s := b.Snapshot()
	require.Zero(t, s.HPOutstanding)
	require.Zero(t, s.BEOutstanding)
}

func TestWaitsAreCountedByWhatFirstHeldThem(t *testing.T) {
	b := NewBoard(132, 400*us, 66)
	defer b.Close()
	b.BEWaited(30*us, WaitSMs)
	b.BEWaited(10*us, WaitSMs)
	b.BEWaited(5*us, WaitHP)
	b.BEWaited(1*us, WaitBudget)
	b.BEWaited(2*us, WaitPaused)
	s := b.Snapshot()
	require.Equal(t, int64(5), s.BEWaits)
	require.Equal(t, 48*us, s.BEWaited)
	require.Equal(t, colocation.WaitReasons{HP: 1, SMs: 2, Budget: 1, Paused: 1}, s.BEWaitsBy)
}
