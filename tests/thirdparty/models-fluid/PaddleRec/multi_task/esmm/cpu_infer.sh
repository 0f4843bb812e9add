python infer.py --use_gpu False\  #是否使用gpu
			    --batch_size 64\  #batch_size大小
			    --cpu_num 2\  #cpu数量
			    --test_data_path ./test_data \  #训练数据路径
			    --vocab_path ./vocab/vocab_size.txt #embedding词汇表大小路径