package main

import (
	"context"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/clientconfig"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker"
)

// connect opens a Cluster from the global options and checks, within --timeout, that the
// cluster answers (Cluster.Reachable): a refused connection fails at once, in every command,
// instead of after the whole --timeout. The caller closes it.
func (g globalOptions) connect(ctx context.Context) (*worker.Cluster, error) {
	c, err := g.connectLazy()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	if err := c.Reachable(ctx); err != nil {
		c.Close()
		return nil, g.unreachable(err)
	}
	return c, nil
}

// connectLazy opens a Cluster without asking it anything: for the worker, which starts and
// retries while the brokers are down.
func (g globalOptions) connectLazy() (*worker.Cluster, error) {
	opts, err := g.kgoOpts()
	if err != nil {
		return nil, err
	}
	c, err := worker.Connect(opts...)
	if err != nil {
		return nil, err
	}
	c.SetPrincipal(g.principal())
	return c, nil
}

// principal is the Kafka principal --command-config authenticates as, for messages ("" when
// the file does not say: PLAINTEXT, TLS client certificates). kgoOpts has loaded it already.
func (g globalOptions) principal() string {
	if g.commandConfig == "" {
		return ""
	}
	sec, err := clientconfig.Load(g.commandConfig)
	if err != nil {
		return ""
	}
	return sec.Principal()
}

// connectFor connects and bounds what follows by --timeout: the one way a command starts talking
// to Kafka. done releases the deadline and closes the client.
func (g globalOptions) connectFor(ctx context.Context) (context.Context, *worker.Cluster, func(), error) {
	c, err := g.connect(ctx)
	if err != nil {
		return ctx, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	return ctx, c, func() { cancel(); c.Close() }, nil
}

// bootstrap is the bootstrap list as a flag value, quoted in hints.
func (g globalOptions) bootstrap() string { return strings.Join(g.bootstrapServers, ",") }

// project opens a caught-up projection of a control topic, within the
// --timeout. A projection that cannot prove it is caught up is an error.
func (g globalOptions) project(ctx context.Context, c *worker.Cluster, controlTopic string, opts ...projector.Option) (*worker.Projection, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	// A topic of another shape is never read as a control topic (gate.Shape): a data topic
	// read as one holds no decision, and "no boundary" about it would be a lie.
	err := c.CheckControlShape(ctx, controlTopic)
	if errors.Is(err, worker.ErrTopicNotFound) {
		return nil, g.missingControlTopic(ctx, c, controlTopic)
	}
	if err != nil {
		return nil, g.unreachable(err)
	}
	return g.projectChecked(ctx, c, controlTopic, opts...)
}

// projectChecked is project for a control topic whose shape the caller checked already
// (worker.PrepareControlTopic): it is read without being described again.
func (g globalOptions) projectChecked(ctx context.Context, c *worker.Cluster, controlTopic string, opts ...projector.Option) (*worker.Projection, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	p, err := c.Project(ctx, controlTopic, opts...)
	if err != nil {
		return nil, g.unreachable(err)
	}
	if err := p.CheckShape(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}
