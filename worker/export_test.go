package worker

import "context"

// ReadFlinkTopicTo is readFlinkTopic for tests: the read to an end the caller captured, as a
// mirror writer's read does (settledEnd).
func (c *Cluster) ReadFlinkTopicTo(ctx context.Context, topic string, end int64) (*FlinkTopic, error) {
	return c.readFlinkTopic(ctx, topic, end)
}

// ReadTo is readTo for tests: a control topic's read to an end the caller captured.
func (p *Projection) ReadTo(ctx context.Context, end int64) error { return p.readTo(ctx, end) }
