package main

import (
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// runEtcd is the etcd role: an embedded etcd v3.7.3 on loopback ports,
// serving until it receives SIGTERM or SIGINT. It prints "ready" on stdout
// once it serves.
func runEtcd(c config) error {
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", c.etcdPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", c.etcdPeer)}
	cfg := embed.NewConfig()
	cfg.Dir = c.etcdDir
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Durability is not what is measured; fsync on a shared disk only adds noise.
	cfg.UnsafeNoFsync = true
	cfg.QuotaBackendBytes = 8 << 30
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		return fmt.Errorf("etcd not ready after a minute")
	}
	fmt.Println("ready")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
		return nil
	case err := <-e.Err():
		return err
	}
}
