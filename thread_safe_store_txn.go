package cache

import (
	"context"
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Transaction applies txns in order under one lock. An index function that
// fails on a written object leaves it out of that index only (client-go
// panics); a write of unknown type is skipped and logged.
func (s *threadSafeMap) Transaction(txns ...ThreadSafeStoreTransaction) {
	for _, f := range s.transaction(txns, nil) {
		utilruntime.HandleErrorWithContext(context.TODO(), f.err, "Transaction write skipped", "key", txns[f.pos].Key)
	}
}

// txnFailure is a transaction write that was not applied.
type txnFailure struct {
	pos int
	err error
}

// txnPlan is what a transaction computes before taking the lock: held[i]
// is write i's object as the map keeps it and priors[i] what its key held
// (both nil when the store has no form), vals[i*n:(i+1)*n] its values for
// n index functions, and failed lists, in order, the writes that cannot be
// applied.
type txnPlan struct {
	held   []any
	vals   [][]string
	priors []prior
	failed []txnFailure
}

// txnBuffers give a transaction of one write (an informer's usual batch)
// its plan's slices without allocating. They stay on transaction's stack
// only while no slice the plan points to leaves the function: what
// escapes (the failures, the index entries left out) is kept apart.
type txnBuffers struct {
	held   [1]any
	vals   [4][]string
	priors [1]prior
}

// transaction applies txns under one lock and returns the writes it
// skipped. The store's resource version becomes that of the last applied
// write's object, if it has one. read, when not nil, is what each write's
// key held when the caller looked it up (readPrior): with a form, the
// transaction takes it as the prior instead of reading it again, once it
// has checked under the lock that the key still holds it.
func (s *threadSafeMap) transaction(txns []ThreadSafeStoreTransaction, read []prior) []txnFailure {
	if len(txns) == 0 {
		return nil
	}
	var p txnPlan
	var bufs txnBuffers
	if s.form != nil {
		p.held = bufOrMake(bufs.held[:], len(txns))
		p.priors = bufOrMake(bufs.priors[:], len(txns))
		copy(p.priors, read)
	}
	failures := s.holdTxns(&p, txns)
	p.failed = failures
	set := s.indexers.Load()
	p.vals = bufOrMake(bufs.vals[:], len(txns)*len(set.fns))
	indexFails := p.values(set, txns)
	s.lockForTxn(&p, txns, read != nil)
	if cur := s.indexers.Load(); cur != set {
		set = cur
		p.vals = bufOrMake(bufs.vals[:], len(txns)*len(set.fns))
		indexFails = p.values(set, txns)
	}
	s.commitLocked(set, txns, &p)
	s.mu.Unlock()
	s.reportIndexFailures(indexFails)
	return failures
}

// holdTxns checks the type of every write and holds the object of every
// Add and Update, into p.held when the store has a form. It returns the
// writes that cannot be applied.
func (s *threadSafeMap) holdTxns(p *txnPlan, txns []ThreadSafeStoreTransaction) (failures []txnFailure) {
	for i, t := range txns {
		switch t.Type {
		case TransactionTypeAdd, TransactionTypeUpdate:
			if s.form == nil {
				continue
			}
			held, err := s.hold(t.Key, t.Object)
			if err != nil {
				// Counted here, reported by whoever receives the
				// transaction's error.
				s.objectErrors.Inc()
				failures = append(failures, txnFailure{i, err})
			}
			p.held[i] = held
		case TransactionTypeDelete:
		default:
			failures = append(failures, txnFailure{i, fmt.Errorf("unknown transaction type %q", t.Type)})
		}
	}
	return failures
}

// commitLocked applies every write of txns but the failed ones.
func (s *threadSafeMap) commitLocked(set *indexerSet, txns []ThreadSafeStoreTransaction, p *txnPlan) {
	var rv storeRV
	var deleted []string
	n := len(set.fns)
	failed := p.failed
	for i, t := range txns {
		if len(failed) > 0 && failed[0].pos == i {
			failed = failed[1:]
			continue
		}
		switch {
		case t.Type == TransactionTypeDelete:
			if s.deleteLocked(set, t.Key, p.priorLocked(s, txns, i)) && s.form != nil {
				deleted = append(deleted, t.Key)
			}
		case p.held == nil:
			s.putLocked(set, t.Key, t.Object, t.Object, p.vals[i*n:(i+1)*n], prior{})
		default:
			s.putLocked(set, t.Key, p.held[i], t.Object, p.vals[i*n:(i+1)*n], p.priorLocked(s, txns, i))
		}
		rv = rvOf(t.Object)
	}
	s.recordRVLocked(rv)
	s.dropDeletedLocked(deleted)
}

// dropDeletedLocked tells the form about the keys a transaction deleted
// and did not write again.
func (s *threadSafeMap) dropDeletedLocked(deleted []string) {
	for _, key := range deleted {
		if _, back := s.items.Get(key); !back {
			s.dropLocked(key)
		}
	}
}

// values computes, into p.vals (one slice for the batch), the index
// values of every Add and Update not failed, and returns the index entries
// left out.
func (p *txnPlan) values(set *indexerSet, txns []ThreadSafeStoreTransaction) (indexFails []error) {
	n := len(set.fns)
	failed := p.failed
	for i, t := range txns {
		if len(failed) > 0 && failed[0].pos == i {
			failed = failed[1:]
			continue
		}
		if t.Type == TransactionTypeAdd || t.Type == TransactionTypeUpdate {
			_, fails := set.values(p.vals[i*n:i*n:(i+1)*n], t.Key, t.Object)
			indexFails = append(indexFails, fails...)
		}
	}
	return indexFails
}

// bufOrMake returns buf's first n elements, zeroed, if it has n, and a new
// slice otherwise.
func bufOrMake[T any](buf []T, n int) []T {
	if n > len(buf) {
		return make([]T, n)
	}
	clear(buf[:n])
	return buf[:n]
}

// lockForTxn takes the write lock for txns; with a form, once every key
// still holds the prior read before the lock (see lockForWriteOf). With
// read, p.priors holds priors the caller read: they are checked first and
// read again only if a key has changed since.
func (s *threadSafeMap) lockForTxn(p *txnPlan, txns []ThreadSafeStoreTransaction, read bool) {
	if s.form == nil {
		s.lockForWrite()
		return
	}
	for ; ; read = false {
		if !read {
			s.readTxnPriors(p, txns)
		}
		s.lockForWrite()
		if p.priorsHoldLocked(s, txns) {
			return
		}
		s.mu.Unlock()
	}
}

// readTxnPriors reads the prior of every write's key: what the map holds
// under one lock, viewed after releasing it.
func (s *threadSafeMap) readTxnPriors(p *txnPlan, txns []ThreadSafeStoreTransaction) {
	s.mu.Lock()
	for i, t := range txns {
		p.priors[i].held, p.priors[i].existed = s.items.Get(t.Key)
	}
	s.mu.Unlock()
	for i, t := range txns {
		p.priors[i] = s.viewPrior(t.Key, p.priors[i].held, p.priors[i].existed)
	}
}

func (p *txnPlan) priorsHoldLocked(s *threadSafeMap, txns []ThreadSafeStoreTransaction) bool {
	for i, t := range txns {
		if !s.holdsLocked(t.Key, p.priors[i]) {
			return false
		}
	}
	return true
}

// priorLocked is the prior of write i, about to be applied: the one read
// before the lock, unless an earlier write of the transaction changed the
// key; then the key holds that write's held value, or nothing.
func (p *txnPlan) priorLocked(s *threadSafeMap, txns []ThreadSafeStoreTransaction, i int) prior {
	if p.priors == nil {
		return prior{}
	}
	if s.holdsLocked(txns[i].Key, p.priors[i]) {
		return p.priors[i]
	}
	cur, existed := s.items.Get(txns[i].Key)
	if !existed {
		return prior{}
	}
	for j := i - 1; j >= 0; j-- {
		if p.held[j] == cur {
			return prior{held: cur, obj: txns[j].Object, existed: true, known: true}
		}
	}
	// Not reached: under the lock only this transaction changes keys.
	// Unknown, the key is found in the indexes by a scan.
	return prior{held: cur, existed: true}
}
