package checkpoint

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestADamagedSlotHeaderIsReportedCorrupt: a committed step whose slot metadata header was
// damaged used to vanish from the local root (and from `ckpt verify`), as if never saved.
func TestADamagedSlotHeaderIsReportedCorrupt(t *testing.T) {
	for _, c := range []struct {
		name string
		step int64 // the step whose header is damaged
	}{{"the pointer's slot", 3}, {"an older slot", 2}} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			e := openEngine(t, smallOptions(RankDir(root, 0), zerolog.Nop()))
			for step := int64(1); step <= 3; step++ {
				saveWait(t, e, step, testShard(step, 100_000), plan1)
			}
			meta := strings.TrimSuffix(slotOf(t, e, c.step), ".data") + ".meta"
			require.NoError(t, e.Close())
			flipByte(t, meta, 2) // the magic

			src := LocalRoot(root, zerolog.Nop())
			steps, err := src.DurableSteps(context.Background())
			require.NoError(t, err)
			assert.Contains(t, steps, c.step, "the damaged step is still listed")
			_, _, err = src.ReadShard(context.Background(), c.step, 0)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), filepath.Base(meta))

			snap, err := LoadSnapshot(context.Background(), src, -1, zerolog.Nop())
			require.NoError(t, err)
			assert.NotEqual(t, c.step, snap.Step, "a restore falls back past it")
		})
	}
}

// TestIntactSkipsACorruptNewestStep: the newest committed step whose bytes verify.
func TestIntactSkipsACorruptNewestStep(t *testing.T) {
	e := openEngine(t, smallOptions(t.TempDir(), zerolog.Nop()))
	for step := int64(1); step <= 3; step++ {
		saveWait(t, e, step, testShard(step, 250_000), plan1)
	}
	flipByte(t, slotOf(t, e, 3), 1000)
	m, err := e.Intact(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(2), m.Step)
}
