package cache

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestHandlerLagAgeGrowsWhileAHandlerIsStuckWithoutNewEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, m, r := newGatedLagListener()
		stop := p.start()
		p.upsert(newTestPod("ns", "a", "1"))
		synctest.Wait() // the only notification is in flight, the handler is stuck in it
		assert.Equal(t, 0.0, m.pending.Load())
		assert.Equal(t, 0.0, m.age.Load())
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.Equal(t, 30.0, m.age.Load(), "no event arrived, yet the gauge follows the stuck call")
		p.upsert(newTestPod("ns", "a", "2"))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, 1.0, m.pending.Load())
		assert.Equal(t, 35.0, m.age.Load(), "the call in flight is the oldest notification not handled")
		releaseAndExpectNoLag(t, r, m, 2)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Equal(t, 0.0, m.age.Load(), "an idle handler's gauge stays at zero")
		stop()
	})
	goleak.VerifyNone(t)
}

func TestHandlerLagRefreshTimerOnlyWhileBusyAndMetricOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := newListenerTestProcessor(0)
		gate := &listenerTestRecorder{gate: make(chan struct{})}
		lOff := off.listen(gate)
		stopOff := off.start()
		off.upsert(newTestPod("ns", "a", "1"))
		synctest.Wait()
		lOff.mu.Lock()
		assert.Nil(t, lOff.lagTimer, "metric off: no timer")
		assert.Zero(t, lOff.busy.Load(), "metric off: nothing tracked")
		lOff.mu.Unlock()
		gate.gate <- struct{}{}
		stopOff()

		p, _, r := newGatedLagListener()
		l := p.listeners[0]
		stop := p.start()
		p.upsert(newTestPod("ns", "a", "1"))
		synctest.Wait()
		l.mu.Lock()
		assert.True(t, l.lagArmed, "busy with the metric on: armed")
		l.mu.Unlock()
		r.gate <- struct{}{}
		time.Sleep(2 * lagRefreshInterval)
		synctest.Wait()
		l.mu.Lock()
		assert.False(t, l.lagArmed, "the first tick that finds the handler idle lets the timer lapse")
		l.mu.Unlock()
		stop()
	})
	goleak.VerifyNone(t)
}
