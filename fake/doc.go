// Package fake is placeholder.
package fake
