echo "Begin DownLoad One Billion Data"
wget --no-check-certificate https://paddlerec.bj.bcebos.com/benchmark/word2vec_benchmark_data.tar.gz
echo "Begin Unzip One Billion Data"
tar -xf word2vec_benchmark_data.tar.gz
echo "Get One Billion Data Success"
