"""paddle.fluid.incubate.fleet.utils: Fluid 1.8's HDFS client (`hdfs.HDFSClient`)."""
