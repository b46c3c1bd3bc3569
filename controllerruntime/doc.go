// Package crcache is a controller-runtime cache whose informers are
// openinformer's.
package crcache
