package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/intake-int/intake/api"
)

// A Client is how a command queries a running collector: Get returns the answer's body, or
// a *StatusError carrying the collector's JSON error message. The server here is the API
// server every collector runs, with one handler registered as a processor registers its
// routes, on a port the kernel picks.
func ExampleClient() {
	s := api.New("127.0.0.1:0", nil)
	s.HandleFunc("GET /api/v1/echo", func(w http.ResponseWriter, r *http.Request) {
		api.JSON(w, http.StatusOK, map[string]string{"said": r.URL.Query().Get("say")})
	})
	if err := s.Start(context.Background()); err != nil {
		panic(err)
	}
	defer s.Stop(context.Background())

	c, err := api.NewClient(s.Addr(), 0) // INTAKE_TOKEN, INTAKE_TOKEN_FILE and INTAKE_CA unset
	if err != nil {
		panic(err)
	}
	body, err := c.Get("/api/v1/echo", url.Values{"say": {"hello"}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s", body) // indented JSON, as the API writes it

	_, err = c.Get("/api/v1/nothing", nil)
	var se *api.StatusError
	if errors.As(err, &se) {
		fmt.Println(se.Code, se.Msg)
	}
	// Output:
	// {
	//   "said": "hello"
	// }
	// 404 no such endpoint: /api/v1/nothing
}
