package rpc

import (
	"fmt"
	"net"
	"os"
)

// fakeDaemon listens on path and reports every byte a client sends on
// stdout; it runs as another user in TestDialRefusesAnotherUsersSocket.
func fakeDaemon(path string) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	_ = os.Chmod(path, 0o777)
	fmt.Println("LISTENING")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					fmt.Printf("GOT %q\n", buf[:n])
				}
				if err != nil {
					return
				}
			}
		}()
	}
}
