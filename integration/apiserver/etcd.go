package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdServer is an in-process etcd bound to loopback ports, with a client
// for the operations tests need (compaction).
type etcdServer struct {
	etcd   *embed.Etcd
	client *clientv3.Client
	url    string
}

// startEtcd starts etcd with its data under dir. Ports are picked free just
// before use; a lost race with another process shows up as a start error.
func startEtcd(dir string) (*etcdServer, error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return nil, err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("etcd not ready after a minute")
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{clientURL.String()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return &etcdServer{etcd: e, client: client, url: clientURL.String()}, nil
}

// compact compacts etcd's history up to its current revision, so that any
// read or watch from an older revision fails with "compacted".
func (s *etcdServer) compact(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, "compaction-probe")
	if err != nil {
		return 0, fmt.Errorf("read etcd revision: %w", err)
	}
	rev := resp.Header.Revision
	if _, err := s.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compact etcd at %d: %w", rev, err)
	}
	return rev, nil
}

func (s *etcdServer) stop() {
	_ = s.client.Close()
	s.etcd.Close()
}

// freeLoopbackURL returns an http URL on a loopback port that was free a
// moment ago.
func freeLoopbackURL() (*url.URL, error) {
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}, nil
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
