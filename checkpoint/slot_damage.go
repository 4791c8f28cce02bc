package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
)

// damagedSlot is a slot whose metadata is unreadable although it held a committed checkpoint:
// not empty, not invalidated (a zeroed header) and not a checkpoint torn in flight (a valid
// header with a seq above the pointer's), but damaged after the commit. Its step is known from
// the pointer (when it names the slot) or from the metadata JSON behind the broken header.
// Readers report the step as corrupt instead of letting it vanish.
type damagedSlot struct {
	idx  int
	step int64
	why  string
}

// findDamage decides whether slot idx's unreadable metadata at path is a damaged commit.
func findDamage(path string, idx int, d diskState, readErr error) (damagedSlot, bool) {
	if !d.ptrOK {
		return damagedSlot{}, false
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return damagedSlot{}, false
	}
	h := b[:min(len(b), slotHeaderSize)]
	if bytes.Equal(h, invalidSlotHeader[:len(h)]) {
		return damagedSlot{}, false // invalidated on purpose, or never written
	}
	if len(h) == slotHeaderSize && string(h[:8]) == slotMetaMagic && binary.LittleEndian.Uint32(h[24:]) == CRC32C(h[:24]) &&
		binary.LittleEndian.Uint64(h[8:]) > d.ptr.Seq {
		return damagedSlot{}, false // a checkpoint that was in flight when the writer stopped
	}
	why := fmt.Sprintf("slot %d metadata %s is damaged (%v)", idx, path, readErr)
	if d.ptr.Slot == uint32(idx) {
		return damagedSlot{idx: idx, step: d.ptr.Step, why: why}, true
	}
	if len(b) > slotHeaderSize {
		var m ShardMeta
		if err := json.NewDecoder(bytes.NewReader(b[slotHeaderSize:])).Decode(&m); err == nil && m.Seq > 0 && m.Seq <= d.ptr.Seq {
			return damagedSlot{idx: idx, step: m.Step, why: why}, true
		}
	}
	return damagedSlot{}, false
}
