package devserver

import (
	"fmt"
	"net"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

func newUI(opts Options) *uiserver.Server {
	return uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                opts.IP,
		Port:                opts.UIPort,
		TemporalGRPCAddress: net.JoinHostPort(opts.IP, strconv.Itoa(opts.Port)),
		EnableUI:            true,
		DefaultNamespace:    opts.Namespace,
		DisableNewsFetch:    true, // no internet on most dev boxes we target; don't try
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		Codec:               uiconfig.Codec{Endpoint: opts.CodecEndpoint},
	}))
}

// waitListening polls addr until it accepts TCP connections or the UI goroutine reports
// an error.
func waitListening(addr string, failed <-chan error) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-failed:
			if err == nil {
				err = fmt.Errorf("UI server exited")
			}
			return err
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("UI did not listen on %s within 15s", addr)
}
