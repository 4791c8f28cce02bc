package cloud

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEventLogNumbersKeepsTheNewestAndReadsSince(t *testing.T) {
	l := &EventLog{Keep: 3}
	assert.Zero(t, l.LastSeq())
	for _, id := range []string{"a", "b", "c", "d"} {
		l.Add(Event{Kind: EventPreempted, Instance: Instance{ID: id}})
	}
	assert.Equal(t, int64(4), l.LastSeq())
	all := l.EventsSince(0)
	assert.Len(t, all, 3, "the oldest is forgotten past Keep")
	assert.Equal(t, int64(2), all[0].Seq)
	assert.Equal(t, "b", all[0].Instance.ID)
	assert.Equal(t, []Event{all[2]}, l.EventsSince(3))
	assert.Empty(t, l.EventsSince(4))
}
